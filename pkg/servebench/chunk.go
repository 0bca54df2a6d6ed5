package servebench

import "bytes"

// chunkInfo is what the metrics need from one chat completion chunk.
type chunkInfo struct {
	choices bool // a non-empty "choices" list
	text    bool // the delta carries non-empty content
	usage   int  // usage.completion_tokens, -1 when absent or null
	prompt  int  // usage.prompt_tokens, -1 when absent or null
	isError bool // an error object instead of a chunk
}

var (
	keyChoices    = []byte(`"choices"`)
	keyUsage      = []byte(`"usage"`)
	keyCompletion = []byte(`"completion_tokens"`)
	keyPrompt     = []byte(`"prompt_tokens"`)
	keyContent    = []byte(`"content"`)
	keyText       = []byte(`"text"`)
	keyReasoning  = []byte(`"reasoning"`)
	keyReasonOld  = []byte(`"reasoning_content"`)
	// textKeys carry a chunk's text: the answer (chat content, completions text) or a
	// reasoning model's thinking (reasoning since vLLM PR #27752; reasoning_content before,
	// removed by PR #33402).
	textKeys    = [][]byte{keyContent, keyText, keyReasoning, keyReasonOld}
	keyError    = []byte(`"error"`)
	keyObjError = []byte(`"object":"error"`)
)

// classify scans a chunk's JSON. A key such as "choices" cannot occur inside a JSON string
// value unescaped, so finding it finds the key.
func classify(p []byte) chunkInfo {
	ci := chunkInfo{usage: -1, prompt: -1}
	if v, ok := valueAfter(p, keyChoices); ok {
		if len(v) > 0 && v[0] == '[' {
			v = skipSpace(v[1:])
			ci.choices = len(v) > 0 && v[0] != ']'
		}
		if ci.choices {
			for _, k := range textKeys {
				c, ok := valueAfter(v, k)
				if ok && len(c) > 1 && c[0] == '"' && c[1] != '"' {
					ci.text = true
					break
				}
			}
		}
	} else if bytes.Contains(p, keyError) || bytes.Contains(p, keyObjError) {
		ci.isError = true
		return ci
	}
	if v, ok := valueAfter(p, keyUsage); ok && len(v) > 0 && v[0] == '{' {
		if n, ok := valueAfter(v, keyCompletion); ok {
			ci.usage = atoi(n)
		}
		if n, ok := valueAfter(v, keyPrompt); ok {
			ci.prompt = atoi(n)
		}
	}
	return ci
}

// valueAfter returns the bytes from the value of key on.
func valueAfter(p, key []byte) ([]byte, bool) {
	i := bytes.Index(p, key)
	if i < 0 {
		return nil, false
	}
	v := skipSpace(p[i+len(key):])
	if len(v) == 0 || v[0] != ':' {
		return nil, false
	}
	return skipSpace(v[1:]), true
}

func skipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}

func atoi(p []byte) int {
	n, any := 0, false
	for _, c := range p {
		if c < '0' || c > '9' {
			break
		}
		n, any = n*10+int(c-'0'), true
	}
	if !any {
		return -1
	}
	return n
}
