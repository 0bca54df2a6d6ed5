package servebench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
)

// benchWords is the vocabulary of random prompts: common words, about one token each.
var benchWords = strings.Fields(`the of and to in is was for on are with as at be by this have from or
one had not but what all were when we there can an your which their said if do will each about how up
out them then she many some so these would other into has more her two like him see time could no make
than first been its who now people my made over did down only way find use may water long little very
after words called just where most know get through back much go good new write our used me man too
any day same right look think also around another came come work three word must because does part`)

// benchRequests returns the run's requests: the dataset or prompt file in turn, else random
// prompts. A random prompt on /v1/completions is token IDs, so its length in tokens is exact
// without a tokenizer here (vLLM accepts a list of token IDs as the prompt); on chat it is
// words of about one token each (the chat template adds a few). Lengths vary uniformly by
// RangeRatio around InputLen and OutputLen, after PrefixLen shared tokens.
func benchRequests(cfg Config, rng *rand.Rand) []Request {
	out := make([]Request, cfg.Requests)
	switch {
	case len(cfg.Dataset) > 0:
		for i := range out {
			out[i] = cfg.Dataset[i%len(cfg.Dataset)]
		}
		return out
	case len(cfg.Prompts) > 0:
		for i := range out {
			out[i] = Request{Prompt: cfg.Prompts[i%len(cfg.Prompts)]}
		}
		return out
	}
	span := func(l int) int {
		if cfg.RangeRatio <= 0 || l <= 0 {
			return l
		}
		lo, hi := int(math.Floor(float64(l)*(1-cfg.RangeRatio))), int(math.Ceil(float64(l)*(1+cfg.RangeRatio)))
		if lo < 1 {
			lo = 1
		}
		return lo + rng.IntN(hi-lo+1)
	}
	// Token IDs from a range every current vocabulary has (Llama 3 128k, Qwen2.5 151k,
	// Mistral 32k), away from the special tokens at the start.
	const idLo, idHi = 1000, 30000
	prefixIDs := make([]int, cfg.PrefixLen)
	prefixWords := make([]string, cfg.PrefixLen)
	for k := range prefixIDs {
		prefixIDs[k] = idLo + rng.IntN(idHi-idLo)
		prefixWords[k] = benchWords[rng.IntN(len(benchWords))]
	}
	for i := range out {
		in := span(cfg.InputLen)
		r := Request{OutputLen: span(cfg.OutputLen), PromptLen: cfg.PrefixLen + in}
		if cfg.API == APICompletions {
			r.PromptIDs = append(append(make([]int, 0, cfg.PrefixLen+in), prefixIDs...), make([]int, in)...)
			for k := cfg.PrefixLen; k < len(r.PromptIDs); k++ {
				r.PromptIDs[k] = idLo + rng.IntN(idHi-idLo)
			}
		} else {
			words := append(append(make([]string, 0, cfg.PrefixLen+in), prefixWords...), make([]string, in)...)
			for k := cfg.PrefixLen; k < len(words); k++ {
				words[k] = benchWords[rng.IntN(len(benchWords))]
			}
			r.Prompt = strings.Join(words, " ")
		}
		out[i] = r
	}
	return out
}

// LoadPrompts reads prompts from a file: JSON Lines with a "prompt" (or "text") field, or
// else one prompt per non-empty line.
func LoadPrompts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "{") {
			var obj struct {
				Prompt string `json:"prompt"`
				Text   string `json:"text"`
			}
			if err := json.Unmarshal([]byte(line), &obj); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			if obj.Prompt == "" {
				obj.Prompt = obj.Text
			}
			if obj.Prompt == "" {
				return nil, fmt.Errorf("%s:%d: no \"prompt\" field", path, n)
			}
			out = append(out, obj.Prompt)
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}

// LoadShareGPT reads a ShareGPT-format file (a JSON array of {"conversations": [{"from":
// "human", "value": ...}, {"from": "gpt", "value": ...}]}) as vLLM's ShareGPTDataset does:
// the conversations in an order shuffled by seed (vLLM shuffles with Python's random.seed;
// ain's order is its own, reproducible for a seed), each one's first turn a prompt and the
// second turn's length that request's output length unless outputLen > 0 overrides it, and
// vLLM's length filter (vllm/benchmarks/datasets is_valid_sequence: a prompt or reply under 4
// tokens, a prompt over 1024, or both over 2048 are skipped; the reply's minimum only when
// outputLen is not given). Lengths are estimated at 4 characters a token: ain has no tokenizer,
// where vLLM counts with the model's. skipped counts the conversations the filter left out
// (one-turn and blank-prompt ones are not counted).
func LoadShareGPT(path string, outputLen int, seed uint64) (reqs []Request, skipped int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(b, &convs); err != nil {
		// Where and what, not the decoder's Go type dump.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			err = fmt.Errorf("line %d: %v", 1+bytes.Count(b[:se.Offset], []byte("\n")), se)
		case errors.As(err, &te):
			where := "the top level"
			if te.Field != "" {
				where = strings.TrimPrefix(te.Field, ".")
			}
			err = fmt.Errorf("line %d: %s is a JSON %s", 1+bytes.Count(b[:min(int(te.Offset), len(b))], []byte("\n")), where, te.Value)
		}
		return nil, 0, fmt.Errorf("%s: not a ShareGPT file (a JSON array of {\"conversations\": [{\"from\": \"human\", \"value\": ...}, ...]}): %v", path, err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x73686172))
	rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	estimate := func(s string) int { return (len(s) + 3) / 4 }
	for _, c := range convs {
		if len(c.Conversations) < 2 || strings.TrimSpace(c.Conversations[0].Value) == "" {
			continue
		}
		in, ol := estimate(c.Conversations[0].Value), outputLen
		if ol <= 0 {
			ol = estimate(c.Conversations[1].Value)
		}
		if in < shareGPTMinLen || (outputLen <= 0 && ol < shareGPTMinLen) || in > shareGPTMaxPrompt || in+ol > shareGPTMaxTotal {
			skipped++
			continue
		}
		reqs = append(reqs, Request{Prompt: c.Conversations[0].Value, OutputLen: ol})
	}
	if len(reqs) == 0 {
		return nil, skipped, fmt.Errorf("%s: no conversation with a prompt and a reply within vLLM's length filter (%d skipped: prompt and reply of %d to %d tokens, %d in all)",
			path, skipped, shareGPTMinLen, shareGPTMaxPrompt, shareGPTMaxTotal)
	}
	return reqs, skipped, nil
}

// vLLM's is_valid_sequence defaults for ShareGPT (min_len, max_prompt_len, max_total_len).
const (
	shareGPTMinLen    = 4
	shareGPTMaxPrompt = 1024
	shareGPTMaxTotal  = 2048
)
