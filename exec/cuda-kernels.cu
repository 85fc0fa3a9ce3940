/* placeholder */
extern "C" int simpar_cu_placeholder(void);
int simpar_cu_placeholder(void) { return 0; }
