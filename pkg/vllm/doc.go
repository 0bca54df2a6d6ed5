// Package vllm deploys vLLM model servers on a cluster: it builds their objects (Deployment,
// Service, Ingress or Gateway API route, API-key and TLS Secrets) from a recipe, applies and
// rolls them, waits until they serve, and finds and describes the ones deployed.
package vllm
