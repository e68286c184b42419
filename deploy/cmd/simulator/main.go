// Command simulator is a fake model server (vLLM / llama.cpp server / TGI / Ollama stand-in)
// for tests, `make run` and benchmarks. See internal/simulator (in the gateway's module)
// for protocols, knobs and the token count rule. Every flag can also be set by the
// environment variable GATEWAY_SIM_<FLAG_NAME_UPPER_SNAKE>, e.g. --latency-ms /
// GATEWAY_SIM_LATENCY_MS.
package main

import (
	"os"

	"github.com/sekgate/gateway/internal/simulator"
)

func main() { simulator.Main(os.Args[1:]) }
