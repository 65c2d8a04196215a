// logger.cc - SyncTools' MPSC logger on <jpsync.hpp>: four workers push
// std::string messages through a jpsync::mpsc_queue (the C queue carries a
// pointer to each message: a byte copy of a std::string would be
// undefined), one logger thread prints them until the queue is closed.
#include <iostream>
#include <jpsync.hpp>
#include <string>
#include <thread>
#include <vector>

struct LogMsg
{
    std::string text;
};

constexpr size_t QUEUE_CAP = 1 << 12;
jpsync::mpsc_queue<LogMsg> logq{QUEUE_CAP};

void logger()
{
    while (auto m = logq.pop())
    {
        std::cout << m->text << '\n';
    }
}

void worker(int id)
{
    for (int i = 0; i < 1000; ++i)
    {
        logq.push(LogMsg{"msg " + std::to_string(id) + ":" + std::to_string(i)});
    }
}

int main()
{
    std::thread consumer(logger);
    std::vector<std::thread> producers;
    for (int i = 0; i < 4; ++i)
    {
        producers.emplace_back(worker, i);
    }
    for (auto& t : producers)
    {
        t.join();
    }
    logq.close();
    consumer.join();
}
