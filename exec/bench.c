/* bench.c: placeholder until written */
typedef int simpar_placeholder_bench_c;
