// Package codesize holds the house rules on the size of production code as a test: no
// function over 80 lines, and the data plane's HTTP glue (dataplane/server) under 1,500
// lines. Production code is every non-test Go file of this module outside the tools that
// only tests and benchmarks use.
package codesize
