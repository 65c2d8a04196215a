# median.awk: the median of a few values, for every benchmark table writer
# in this folder.  Loaded with -f before the program that uses it
# (report-write.sh, mimalloc-bench.sh), or put before an inline program's
# text ("$median_awk", which driver-common.sh sets).

# Median of the n values arr[k, 1..n], "" when n is 0 (insertion sort:
# n is a handful of repetitions).
function median(arr, k, n,    i, j, t, a) {
	if (n < 1)
		return ""
	for (i = 1; i <= n; i++)
		a[i] = arr[k, i] + 0
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# Median of the values in the string s, separated by spaces.
function median_str(s,    a, b, i, n) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++)
		b[0, i] = a[i]
	return median(b, 0, n)
}
