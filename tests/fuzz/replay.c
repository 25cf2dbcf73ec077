/* Runs the fuzz harness once on each file given (no libFuzzer needed): the
 * seeds and every crash the fuzzer found are regression inputs for
 * `make check` on any compiler.  Exit 0 when every input passed (a failing
 * input aborts, as under the fuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t buf[65536];
		size_t n;

		if (!f) {
			perror(argv[i]);
			return 2;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		printf("ok %s\n", argv[i]);
	}
	return 0;
}
