// atomic-wait-bench.cc - the 17-waiter scenario of tests/bench/sync-bench.c
// with C++20 std::atomic<bool>::wait / notify_one from the system's
// libstdc++, the peer of jp_wait / jp_notify_one.
//
//   atomic-wait-bench ROUNDS handshake|burst
//
// Prints the same CSV rows as "sync-bench notify", implementation
// std_atomic_wait.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>
#include <sys/resource.h>

namespace {

constexpr int waiters = 17;

struct alignas(64) Flag {
	std::atomic<bool> set{false};
};

Flag flags[waiters];
alignas(64) std::atomic<unsigned> acks{0};
unsigned long long rounds;
bool burst;

double cpu_s()
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// Context switches of the whole process (every thread), voluntary and not.
double csw()
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	return double(ru.ru_nvcsw) + double(ru.ru_nivcsw);
}

long peak_rss_kb()
{
	rusage ru{};
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

void waiter(Flag *f)
{
	for (unsigned long long r = 0; r < rounds; r++) {
		f->set.wait(false);
		f->set.store(false);
		if (!burst)
			f->set.notify_one();
		else if (acks.fetch_add(1) + 1 == (r + 1) * waiters)
			acks.notify_one();
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3 || (std::string(argv[2]) != "burst" && std::string(argv[2]) != "handshake")) {
		std::fprintf(stderr, "usage: atomic-wait-bench ROUNDS handshake|burst\n");
		return 2;
	}
	rounds = std::strtoull(argv[1], nullptr, 10);
	burst = std::string(argv[2]) == "burst";
	std::vector<std::thread> pool;
	for (auto &f : flags)
		pool.emplace_back(waiter, &f);
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	auto t0 = std::chrono::steady_clock::now();
	double c0 = cpu_s(), s0 = csw();
	for (unsigned long long r = 0; r < rounds; r++) {
		for (auto &f : flags) {
			f.set.store(true);
			f.set.notify_one();
			if (!burst)
				f.set.wait(true);
		}
		unsigned a;
		while (burst && (a = acks.load()) != (r + 1) * waiters)
			acks.wait(a);
	}
	auto t1 = std::chrono::steady_clock::now();
	double c1 = cpu_s(), s1 = csw();
	for (auto &t : pool)
		t.join();
	double notifies = double(rounds) * waiters;
	double wall_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
	std::printf("notify-17,%s-cpu-per-notify,18,std_atomic_wait,%.3f,us,lower,%ld\n",
		    argv[2], (c1 - c0) * 1e6 / notifies, peak_rss_kb());
	std::printf("notify-17,%s-latency-per-notify,18,std_atomic_wait,%.3f,us,lower,%ld\n",
		    argv[2], wall_us / notifies, peak_rss_kb());
	std::printf("notify-17,%s-csw-per-notify,18,std_atomic_wait,%.3f,switches,lower,%ld\n",
		    argv[2], (s1 - s0) / notifies, peak_rss_kb());
	return 0;
}
