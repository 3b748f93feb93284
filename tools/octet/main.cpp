#include <iostream>
int main() { std::cout << "octet\n"; }
