package openaiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Deterministic sampling and go-openai's omitempty
//
// go-openai's ChatCompletionRequest declares `Temperature float32 `json:"temperature,omitempty"``,
// so Temperature: 0 never reaches the wire and vLLM falls back to the model's own sampling
// defaults (generation_config.json, e.g. temperature 0.7): answer checks would not be
// reproducible. A tiny positive temperature is not greedy decoding either.
//
// ain keeps go-openai for building and sending requests and sets such fields on the wire:
// WithBodyFields puts JSON fields in the request's context, and the client's transport
// (fieldsTransport) merges them into the encoded body of that one request, replacing what
// go-openai wrote. The override is explicit, per request, and visible in tests that read the
// body the server received ("temperature":0). vLLM treats temperature 0 as greedy sampling.
// Serving with `--generation-config vllm` additionally stops the model's generation_config.json
// from supplying other defaults (repetition_penalty, top_k) that would still shape greedy output.

type fieldsKey struct{}

// WithBodyFields returns a context whose requests, sent through a Client, carry these JSON
// fields in their body, set after go-openai encoded it (so zero values survive omitempty).
func WithBodyFields(ctx context.Context, fields map[string]any) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	merged := map[string]any{}
	if prev, ok := ctx.Value(fieldsKey{}).(map[string]any); ok {
		for k, v := range prev {
			merged[k] = v
		}
	}
	for k, v := range fields {
		merged[k] = v
	}
	return context.WithValue(ctx, fieldsKey{}, merged)
}

// fieldsTransport applies WithBodyFields to JSON request bodies.
type fieldsTransport struct{ next http.RoundTripper }

func (t *fieldsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fields, ok := req.Context().Value(fieldsKey{}).(map[string]any)
	if !ok || req.Body == nil || req.Method != http.MethodPost {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	body, err = setFields(body, fields)
	if err != nil {
		return nil, fmt.Errorf("setting request fields: %w", err)
	}
	// A RoundTripper must not modify the caller's request: send a copy with the new body.
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(r2)
}

// setFields sets top-level fields of a JSON object, keeping the others byte for byte.
func setFields(body []byte, fields map[string]any) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, err
	}
	for k, v := range fields {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[k] = raw
	}
	return json.Marshal(obj)
}
