#!/bin/sh
# gen-c-file.sh - write a C file of about SIZE bytes (default 1000000) to
# standard output: many small functions over a few structs, string
# literals and switch statements, for a compiler to work through (the
# check mode's cost, doc/bench-costs.md).  Deterministic: the same SIZE
# gives the same file.
#
#   sh tests/bench/gen-c-file.sh [SIZE] > big.c
size=${1:-1000000}
exec awk -v size="$size" 'BEGIN {
	print "#include <stddef.h>"
	print "#include <string.h>"
	print "struct node { struct node *next; long key; char name[24]; double w[4]; };"
	print "extern int sink(const char *s, long v);"
	n = 0; i = 0
	while (n < size) {
		s = sprintf("static long f%d(struct node *p, long x)\n{\n" \
			"\tlong acc = %d;\n" \
			"\tfor (int k = 0; p != NULL && k < %d; k++, p = p->next) {\n" \
			"\t\tswitch ((p->key ^ x) & 7) {\n" \
			"\t\tcase 0: acc += p->key * %d; break;\n" \
			"\t\tcase 1: acc ^= (long)p->w[k & 3]; break;\n" \
			"\t\tcase 2: acc -= (long)strlen(p->name); break;\n" \
			"\t\tcase 3: acc += sink(\"f%d case %%d\", k); break;\n" \
			"\t\tdefault: acc = acc * 31 + (x >> (k & 15)); break;\n" \
			"\t\t}\n" \
			"\t}\n" \
			"\treturn acc + %s;\n}\n",
			i, i * 7 + 1, i % 13 + 2, i % 101 + 3, i,
			i > 0 ? sprintf("f%d(p, x + %d)", i - 1, i % 17) : "x")
		printf "%s", s
		n += length(s)
		i++
	}
	printf "long entry(struct node *p, long x)\n{\n\treturn f%d(p, x);\n}\n", i - 1
}'
