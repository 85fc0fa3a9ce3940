/* measure.c: placeholder until written */
typedef int simpar_placeholder_measure_c;
