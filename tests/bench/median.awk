# median.awk: the median of a few values, for the benchmark table writers
# (report-write.sh's report, mimalloc-bench.sh), loaded with -f before
# the program that uses it.

# Median of the n values arr[k, 1..n], "" when n is 0 (insertion sort:
# n is a handful of repetitions).
function median(arr, k, n,    i, j, t, a) {
	if (n < 1)
		return ""
	for (i = 1; i <= n; i++)
		a[i] = arr[k, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
