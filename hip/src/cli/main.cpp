#include <cstdio>
int main() { std::puts("moss-infer-hip " MOSSINFER_VERSION); return 0; }
