// sample-stream.cc - SyncTools' SPSC sample stream with stop on
// <jpsync.hpp>: a producer pushes sin() samples into a
// jpsync::spsc_queue<float> (floats travel in the queue's slots), a consumer
// prints them; after one second main stops both (stop() is close(): the
// blocked push and pop return).  Prints the samples, in order.
#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <jpsync.hpp>
#include <thread>

constexpr size_t CAP = 1024;
jpsync::spsc_queue<float> samples{CAP};
std::atomic<bool> running{true};

void producer()
{
    float phase = 0.0f;
    while (running.load())
    {
        float sample = std::sin(phase);
        phase += 0.01f;
        samples.push(sample);
    }
}

void consumer()
{
    while (running.load())
    {
        if (auto s = samples.pop())
        {
            std::cout << s.value() << '\n';
        }
    }
}

int main()
{
    std::thread prod(producer), cons(consumer);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    running.store(false);
    samples.close();
    prod.join();
    cons.join();
}
