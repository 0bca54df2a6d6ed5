// Package integration holds the serving flow's integration test: `ain serve` → `ain models` →
// `ain chat` → `ain chat test` → `ain bench serve` → `ain serve delete` against the local
// sandbox, whose vLLM pods are simulated: their port 8000 is forwarded to vllmsim's server.
package integration
