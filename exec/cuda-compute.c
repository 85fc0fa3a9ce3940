/* cuda-compute.c: placeholder until written */
typedef int simpar_placeholder_cuda_compute_c;
