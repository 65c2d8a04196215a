// examples-check.cc - checks the output of an examples/ program, read on
// standard input (tests/cxx/check-examples.sh pipes each example into it).
//
//   examples-check producer-consumer | logger | mutex-counter | object-pool
//                  | thread-cached-pool | sample-stream
//
// Exit 0 when the output is what the example must print, else 1 with the
// first difference on standard error.
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static int bad(const std::string &what)
{
	std::cerr << "examples-check: " << what << '\n';
	return 1;
}

static std::vector<std::string> lines()
{
	std::vector<std::string> v;
	std::string l;

	while (std::getline(std::cin, l))
		v.push_back(l);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return bad("usage: examples-check EXAMPLE < output");
	const std::string ex = argv[1];
	const std::vector<std::string> out = lines();

	if (ex == "producer-consumer") {
		if (out.size() != 10)
			return bad("expected 10 lines, got " + std::to_string(out.size()));
		for (int i = 1; i <= 10; i++)
			if (out[i - 1] != "got " + std::to_string(i))
				return bad("line " + std::to_string(i) + ": " + out[i - 1]);
		return 0;
	}
	if (ex == "logger") {
		// 4 workers x 1000 messages, each once, each worker's in order.
		int next[4] = { 0, 0, 0, 0 };

		for (const std::string &l : out) {
			int id = -1, i = -1;
			char colon = 0;
			std::istringstream s(l);
			std::string msg;

			s >> msg >> id >> colon >> i;
			if (msg != "msg" || colon != ':' || id < 0 || id > 3 || i != next[id])
				return bad("out of order or malformed: " + l);
			next[id]++;
		}
		for (int id = 0; id < 4; id++)
			if (next[id] != 1000)
				return bad("worker " + std::to_string(id) + ": " +
					   std::to_string(next[id]) + " messages of 1000");
		return out.size() == 4000 ? 0 : bad("expected 4000 lines");
	}
	if (ex == "mutex-counter")
		return out.size() == 1 && out[0] == "shared=800000" ? 0 : bad("expected shared=800000");
	if (ex == "object-pool" || ex == "thread-cached-pool")
		return out.empty() ? 0 : bad("expected no output");
	if (ex == "sample-stream") {
		// The producer's samples, in order, none lost or repeated: the same
		// float arithmetic and the same formatting as the example.
		float phase = 0.0f;

		if (out.size() < 100)
			return bad("only " + std::to_string(out.size()) + " samples in one second");
		for (std::size_t k = 0; k < out.size(); k++) {
			std::ostringstream want;

			want << std::sin(phase);
			phase += 0.01f;
			if (out[k] != want.str())
				return bad("sample " + std::to_string(k) + ": " + out[k] + ", expected " + want.str());
		}
		return 0;
	}
	return bad("unknown example " + ex);
}
