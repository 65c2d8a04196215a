// thread-cached-pool.cc - SyncTools' ThreadCachedObjectPool example on
// <jpsync.hpp>: jpsync::thread_cached_object_pool<Particle> serves each
// thread from its own cache (jp_pool_local, inline).  Prints nothing, as
// the original; exits 0 when every thread got a Particle (the original
// ignores that; here it is the example's check).
#include <atomic>
#include <jpsync.hpp>
#include <thread>
#include <vector>

struct Particle
{
    float pos[3];
    float vel[3];
};

jpsync::thread_cached_object_pool<Particle> tpool{/*global*/ 1 << 16};
std::atomic<int> exhausted{0};

void simulate()
{
    Particle* p = tpool.acquire();
    if (!p)
    {
        exhausted = 1;
        return; // pool exhausted
    }
    // ... simulate particle ...
    tpool.release(p);
}

int main()
{
    std::vector<std::thread> workers;
    for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i)
    {
        workers.emplace_back(simulate);
    }
    for (auto& t : workers)
    {
        t.join();
    }
    return exhausted;
}
