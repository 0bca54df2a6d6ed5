package openaiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Embeddings returns the embedding of each input from POST /v1/embeddings.
func (c *Client) Embeddings(ctx context.Context, model string, inputs []string) ([][]float64, error) {
	const op = "POST /v1/embeddings"
	b, _ := json.Marshal(map[string]any{"model": model, "input": inputs})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/embeddings", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c.Authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.Explain(err, op)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.Explain(StatusError(resp), op)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	vs := make([][]float64, len(inputs))
	for _, d := range out.Data {
		if d.Index >= 0 && d.Index < len(vs) {
			vs[d.Index] = d.Embedding
		}
	}
	for i, v := range vs {
		if len(v) == 0 {
			return nil, fmt.Errorf("%s: no embedding for input %d", op, i)
		}
	}
	return vs, nil
}
