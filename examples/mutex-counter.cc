// mutex-counter.cc - SyncTools' 8-thread mutex counter on <jpsync.hpp>:
// jpsync::mutex meets BasicLockable, so std::scoped_lock takes it.
// Prints shared=800000.
#include <cstdio>
#include <mutex>
#include <jpsync.hpp>
#include <thread>
#include <vector>

jpsync::mutex mtx;
int shared = 0;

void worker()
{
    for (int i = 0; i < 100'000; ++i)
    {
        std::scoped_lock lock{mtx}; // RAII wrapper works because mutex satisfies BasicLockable
        ++shared;
    }
}

int main()
{
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
    {
        threads.emplace_back(worker);
    }
    for (auto& t : threads)
    {
        t.join();
    }
    std::printf("shared=%d\n", shared);
}
