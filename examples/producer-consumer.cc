// producer-consumer.cc - SyncTools' "tiny producer -> consumer demo" on
// <jpsync.hpp>: BoundedSPSCQueue<int, 1024> becomes jpsync::spsc_queue<int>
// (capacity at run time), SyncTools::Mutex jpsync::mutex, stop() close(),
// blocking_pop() pop().  Prints got 1 ... got 10.
#include <iostream>
#include <mutex>
#include <jpsync.hpp>
#include <thread>

int main()
{
    // Single-producer / single-consumer queue with 1 Ki elements
    jpsync::spsc_queue<int> q{1024};
    jpsync::mutex print_mutex; // Just to serialise std::cout

    std::thread producer(
        [&]
        {
            for (int i = 1; i <= 10; ++i)
            {
                q.try_push(i);
            }
            q.close(); // tell consumer we're done
        });

    std::thread consumer(
        [&]
        {
            while (auto v = q.pop())
            {
                std::scoped_lock lk(print_mutex);
                std::cout << "got " << *v << '\n';
            }
        });

    producer.join();
    consumer.join();
}
