// Package vllmsim is a test double of vLLM's OpenAI-compatible server. It reproduces the wire
// behaviour ain's client depends on: the role-only first stream chunk, the usage chunk with empty
// choices when stream_options.include_usage is set, the closing "data: [DONE]", vLLM's 401 body
// {"error":"Unauthorized"} (not OpenAI's error shape), GET /health, /version and /v1/models.
//
// It is a simulated model server: answers come from a table of canned replies, never from a
// model. Tests use it in-process (NewServer is an http.Handler); the sandbox can run it as a
// local process behind simulated vLLM pods (ListenAndServe).
package vllmsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure the simulated server. The zero value serves one model, "test-model",
// without an API key, emitting tokens as fast as it can.
type Options struct {
	// Models are the served model names (vLLM's --served-model-name); default ["test-model"].
	Models []string
	// Root is reported as each model's "root" (the path vLLM loaded); default the model name.
	Root string
	// APIKey, when set, is required as "Authorization: Bearer KEY" on /v1/* (vLLM's --api-key).
	APIKey string
	// MaxModelLen is reported in /v1/models; default 4096.
	MaxModelLen int
	// Answers maps a case-insensitive substring of the last user message to the reply. The
	// first match in list order wins; nil means DefaultAnswers.
	Answers []Answer
	// Judges are model names answered as judges (not listed in /v1/models): a request to one
	// is graded by a deterministic stand-in for a judge model (judge.go). nil means
	// [CourseJudge], the judge the course's answer checks name; empty: none.
	Judges []string
	// Fallback is the reply when no answer matches; default "I am a simulated model server."
	Fallback string
	// FirstTokenDelay is the time from receiving a request to its first chunk (prefill).
	FirstTokenDelay time.Duration
	// TokenInterval is the time between tokens (decode). Chunk k is written at
	// start + FirstTokenDelay + k*TokenInterval: a fixed schedule, not accumulated sleeps.
	TokenInterval time.Duration
	// RecordTimes keeps, per request (keyed by its X-Request-Id header), the time each chunk
	// carrying choices was flushed, for measuring a client's timing error.
	RecordTimes bool
	// Unhealthy makes /health answer 503, as vLLM does when its engine died.
	Unhealthy bool
	// Reasoning, when set, is streamed as reasoning deltas before every answer, as vLLM does
	// with a --reasoning-parser; ReasoningField names the delta field (default "reasoning",
	// vLLM's name since PR #27752; "reasoning_content" before).
	Reasoning      string
	ReasoningField string
	// CutAfter > 0 ends every stream after that many answer tokens without [DONE], as a proxy
	// timing out or a crashing server does.
	CutAfter int
	// Fault makes /v1/chat/completions and /v1/completions misbehave as broken servers and the
	// things in front of them do; "" answers normally. /health stays 200 throughout, as vLLM's
	// does while its engine is wedged.
	Fault Fault
}

// Fault is a way a model server's answer goes wrong.
type Fault string

// The faults the simulation reproduces.
const (
	// FaultErrorChunk streams the role chunk, then an error object in the older flat shape
	// vLLM used for errors ({"object":"error","message":...,"type":...,"code":...}), then
	// data: [DONE]; current vLLM nests it under "error" (FaultErrorChunkNested).
	FaultErrorChunk       Fault = "error-chunk"
	FaultErrorChunkNested Fault = "error-chunk-nested"
	// FaultHTML answers 200 with an HTML page (a login or error page of something in front of
	// the server) instead of the event stream or JSON.
	FaultHTML Fault = "html"
	// FaultOnlyDone streams nothing but data: [DONE].
	FaultOnlyDone Fault = "only-done"
	// FaultGarbageChunk puts a data: line that is not JSON after the first answer token.
	FaultGarbageChunk Fault = "garbage-chunk"
	// FaultHang sends the response headers (a stream) or nothing (JSON), then holds the
	// connection without a byte until the client gives up: a wedged engine (a hung NCCL group).
	FaultHang Fault = "hang"
	// FaultStall streams the role chunk and the first answer token, then holds the connection
	// without another byte until the client gives up.
	FaultStall Fault = "stall"
)

// chatTemplateTokens is what the simulation counts per message for the chat template (role
// markers and separators, as Qwen's <|im_start|>role\n...<|im_end|>\n), plus the assistant
// prefix once: vLLM's prompt_tokens include them.
const (
	chatTemplateTokens      = 5
	chatAssistantPrefixToks = 3
)

// Answer is one canned reply.
type Answer struct {
	Match string
	Reply string
}

// DefaultAnswers are canned replies to the course's example questions
// (recipes/qa/course-qa.yaml), so the example answer checks pass against the simulation: it
// is the sandbox's right-answer server. The multiple-choice replies pick the right letter in
// the ways models write it; the free-form ones state the reference's facts in other words.
// Older, shorter questions (`ain chat "Which UDP port does RoCEv2 use?"`) follow.
func DefaultAnswers() []Answer {
	return []Answer{
		{"which udp destination port", "The answer is (B): RoCEv2 packets go to UDP destination port 4791."},
		{"made lossless", "C) Priority Flow Control on the RoCE class keeps it lossless, and ECN marks drive DCQCN."},
		{`shows "net/socket"`, "**A** - NCCL could not use the IB/RoCE transport and fell back to TCP sockets."},
		{"logical state stays init", "Answer: D. Without a subnet manager the port gets no LID and never becomes active."},
		{"what does gpudirect rdma do?\n", "B. The NIC reads and writes GPU memory directly over PCIe."},
		{"rocev2 gid of a nic", "I would choose D: point NCCL_IB_GID_INDEX at the RoCE v2 entry from show_gids."},
		{"why is it routable", "RDMA over Converged Ethernet v2 puts the InfiniBand transport into UDP datagrams (destination port 4791) on top of IP, so layer-3 routers forward it between subnets like any IP traffic."},
		{"variable nccl_ib_hca", "It lists the RDMA adapters NCCL may use for its network transport, e.g. mlx5_0:1 for port 1 of the first HCA."},
		{"ring allreduce send per rank", "Every rank moves 2(N-1)/N times the buffer; busbw = algbw * 2(N-1)/N, where algbw is the size over the time."},
		{"gid index", "Use the GID whose type is RoCE v2, often index 3; set it with NCCL_IB_GID_INDEX=3."},
		{"udp", "RoCEv2 carries InfiniBand transport packets in UDP/IP; the destination UDP port is 4791."},
		{"rocev2", "RoCEv2 (RDMA over Converged Ethernet version 2) encapsulates the InfiniBand transport in UDP/IP, so it is routable across layer 3."},
		{"lossless", "RoCE needs a lossless fabric: Priority Flow Control (PFC) and ECN with DCQCN congestion control."},
		{"nccl_ib_hca", "NCCL_IB_HCA selects which RDMA devices (HCAs) NCCL uses, for example mlx5_0,mlx5_1."},
		{"nccl_debug", "Set NCCL_DEBUG=INFO; the log then shows the transport, e.g. NET/IB for InfiniBand or NET/Socket for TCP sockets."},
		{"gpudirect", "GPUDirect RDMA lets the NIC read and write GPU memory directly, without staging through host memory."},
		{"subnet manager", "InfiniBand needs a subnet manager (such as OpenSM) that assigns LIDs and computes routes; a port stays in INIT state until it runs."},
		{"allreduce", "A ring allreduce sends 2(n-1)/n times the data per rank; its bus bandwidth is algbw * 2(n-1)/n."},
		{"capital of france", "Paris."},
	}
}

// Server is the simulated model server, an http.Handler.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	seq   atomic.Int64
	mu    sync.Mutex
	bods  [][]byte
	times map[string][]time.Time
}

// maxKeptBodies bounds the request bodies kept for Bodies (benchmarks send thousands).
const maxKeptBodies = 64

// NewServer returns the simulated server.
func NewServer(opts Options) *Server {
	if len(opts.Models) == 0 {
		opts.Models = []string{"test-model"}
	}
	if opts.MaxModelLen == 0 {
		opts.MaxModelLen = 4096
	}
	if opts.Answers == nil {
		opts.Answers = DefaultAnswers()
	}
	if opts.Judges == nil {
		opts.Judges = []string{CourseJudge}
	}
	if opts.Fallback == "" {
		opts.Fallback = "I am a simulated model server."
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), times: map[string][]time.Time{}}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /ping", s.health)
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": "0.0.0-simulated"})
	})
	s.mux.HandleFunc("GET /v1/models", s.auth(s.models))
	s.mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	s.mux.HandleFunc("POST /v1/completions", s.auth(s.chat))
	s.mux.HandleFunc("POST /v1/embeddings", s.auth(s.embeddings))
	// vLLM's key middleware guards the prefixes /v1, /v2, /inference and /cohere
	// (GUARDED_PREFIX in vllm/entrypoints/serve/middleware/authenticate.py; 0.11's api_server.py
	// guarded /v1 alone) and lets every other path through, /invocations included.
	s.mux.HandleFunc("POST /invocations", s.chat)
	s.mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		n := len(strings.Fields(req.Prompt))
		toks := make([]int, n)
		for i := range toks {
			toks[i] = 1000 + i
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": n, "max_model_len": s.opts.MaxModelLen, "tokens": toks})
	})
	s.mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q} 0\n", s.opts.Models[0])
	})
	if opts.RecordTimes {
		// For a client in another process: the flush times as Unix nanoseconds (wall clock,
		// which processes share; monotonic readings are per process).
		s.mux.HandleFunc("GET /debug/chunk-times", func(w http.ResponseWriter, r *http.Request) {
			ts := s.ChunkTimes(r.URL.Query().Get("id"))
			ns := make([]int64, len(ts))
			for i, t := range ts {
				ns[i] = t.UnixNano()
			}
			writeJSON(w, http.StatusOK, ns)
		})
	}
	s.mux.HandleFunc("/v1/", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	}))
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Bodies returns the bodies of the last requests to /v1/chat/completions, oldest first, as
// received on the wire.
func (s *Server) Bodies() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bods...)
}

// ChunkTimes returns when each chunk with choices was flushed for the request with the given
// X-Request-Id (Options.RecordTimes).
func (s *Server) ChunkTimes(requestID string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.times[requestID]
}

// ListenAndServe serves the simulation on addr (e.g. "127.0.0.1:8000") until ctx ends.
// ready, if not nil, receives the bound address (useful with port 0).
func ListenAndServe(ctx context.Context, addr string, opts Options, ready chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: NewServer(opts), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Unhealthy {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// auth is vLLM's API key middleware on the paths it guards (this simulation serves only /v1
// among them), with vLLM's own error body.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
			return
		}
		h(w, r)
	}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type perm struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen int     `json:"max_model_len"`
		Permission  []perm  `json:"permission"`
	}
	var data []model
	for _, m := range s.opts.Models {
		root := s.opts.Root
		if root == "" {
			root = m
		}
		data = append(data, model{ID: m, Object: "model", Created: time.Now().Unix(), OwnedBy: "vllm",
			Root: root, MaxModelLen: s.opts.MaxModelLen,
			Permission: []perm{{ID: "modelperm-" + m, Object: "model_permission"}}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

type chatRequest struct {
	Model               string    `json:"model"`
	Messages            []message `json:"messages"`
	Prompt              any       `json:"prompt"` // /v1/completions: text or token IDs
	Stream              bool      `json:"stream"`
	MaxTokens           *int      `json:"max_tokens"`
	MaxCompletionTokens *int      `json:"max_completion_tokens"`
	IgnoreEOS           bool      `json:"ignore_eos"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// usageInfo has vLLM's field order.
type usageInfo struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func (m message) text() string {
	if s, ok := m.Content.(string); ok {
		return s
	}
	return fmt.Sprint(m.Content)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	s.mu.Lock()
	if len(s.bods) == maxKeptBodies {
		s.bods = append(s.bods[:0], s.bods[1:]...)
	}
	s.bods = append(s.bods, body)
	s.mu.Unlock()

	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	if !s.serves(req.Model) && !s.judges(req.Model) {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	if s.opts.Fault == FaultHTML {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in.</body></html>\n")
		return
	}
	if s.opts.Fault == FaultHang && !req.Stream {
		<-r.Context().Done()
		return
	}
	c, msg := s.newCall(&req, strings.HasSuffix(r.URL.Path, "/v1/completions"), start)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "BadRequestError", msg)
		return
	}
	if !req.Stream {
		s.reply(w, r, c)
		return
	}
	s.stream(w, r, c)
}

// call is one completion request as the server answers it.
type call struct {
	req         *chatRequest
	completions bool // /v1/completions rather than /v1/chat/completions
	start       time.Time
	toks        []string
	thinking    []string
	finish      string
	id          string
	object      string
	chunkObject string
	created     int64
	usage       usageInfo
	rfield      string // the reasoning field's name
}

// newCall counts the prompt's tokens and chooses the reply; msg is a 400's message.
func (s *Server) newCall(req *chatRequest, completions bool, start time.Time) (*call, string) {
	prompt := 0
	last := ""
	if completions {
		switch p := req.Prompt.(type) {
		case string:
			last, prompt = p, len(strings.Fields(p))
		case []any: // token IDs: exactly that many prompt tokens
			prompt = len(p)
		default:
			return nil, "prompt must be a string or a list of token IDs"
		}
	} else {
		if len(req.Messages) == 0 {
			return nil, "messages must not be empty"
		}
		for _, m := range req.Messages {
			t := m.text()
			prompt += len(strings.Fields(t)) + chatTemplateTokens
			if m.Role == "user" {
				last = t
			}
		}
		prompt += chatAssistantPrefixToks
	}
	maxTok := -1
	if req.MaxCompletionTokens != nil {
		maxTok = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		maxTok = *req.MaxTokens
	}
	if s.judges(req.Model) {
		last = "\x00judge\x00" + last
	}
	c := &call{req: req, completions: completions, start: start, created: start.Unix(), rfield: s.opts.ReasoningField}
	c.toks, c.finish = s.tokens(last, maxTok, req.IgnoreEOS)
	if s.opts.Reasoning != "" && !completions {
		for i, w := range strings.Fields(s.opts.Reasoning) {
			if i > 0 {
				w = " " + w
			}
			c.thinking = append(c.thinking, w)
		}
	}
	c.id = fmt.Sprintf("chatcmpl-%d", s.seq.Add(1))
	c.object, c.chunkObject = "chat.completion", "chat.completion.chunk"
	if completions {
		c.id, c.object, c.chunkObject = fmt.Sprintf("cmpl-%d", s.seq.Load()), "text_completion", "text_completion"
	}
	gen := len(c.toks) + len(c.thinking)
	c.usage = usageInfo{PromptTokens: prompt, TotalTokens: prompt + gen, CompletionTokens: gen}
	if c.rfield == "" {
		c.rfield = "reasoning"
	}
	return c, ""
}

// reply answers a request without streaming, once the whole reply's time has passed.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, c *call) {
	gen := len(c.toks) + len(c.thinking)
	s.sleepUntil(r.Context(), c.start.Add(s.opts.FirstTokenDelay+time.Duration(gen)*s.opts.TokenInterval))
	choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": c.finish, "stop_reason": nil}
	if c.completions {
		choice["text"] = strings.Join(c.toks, "")
	} else {
		msg := map[string]any{"role": "assistant", "content": strings.Join(c.toks, ""), "tool_calls": []any{}}
		if len(c.thinking) > 0 {
			msg[c.rfield] = strings.Join(c.thinking, "")
		}
		choice["message"] = msg
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": c.id, "object": c.object, "created": c.created, "model": c.req.Model,
		"choices": []any{choice}, "usage": c.usage, "prompt_logprobs": nil,
	})
}

// streamer writes one request's server-sent events.
type streamer struct {
	w       http.ResponseWriter
	flusher http.Flusher
	head    string // every chunk's prefix, built once per request
	buf     []byte
	times   []time.Time // when each chunk was flushed, when the server records them
	c       *call
}

func (st *streamer) send(delta, finish string) bool {
	st.buf = append(st.buf[:0], st.head...)
	st.buf = append(st.buf, delta...)
	st.buf = append(st.buf, `,"logprobs":null,"finish_reason":`...)
	st.buf = append(st.buf, finish...)
	st.buf = append(st.buf, "}]}\n\n"...)
	if _, err := st.w.Write(st.buf); err != nil {
		return false
	}
	if st.flusher != nil {
		st.flusher.Flush()
	}
	if st.times != nil {
		st.times = append(st.times, time.Now())
	}
	return true
}

func (st *streamer) text(t string) string {
	if st.c.completions {
		return `"text":` + quote(t)
	}
	return `{"content":` + quote(t) + `}`
}

// stream answers a streaming request chunk by chunk on the server's schedule, with the faults
// the server was told to play.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *call) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st := &streamer{w: w, flusher: flusher, buf: make([]byte, 0, 512), c: c}
	if s.opts.RecordTimes {
		st.times = make([]time.Time, 0, len(c.toks)+2)
	}
	st.head = `data: {"id":"` + c.id + `","object":"` + c.chunkObject + `","created":` + strconv.FormatInt(c.created, 10) +
		`,"model":` + quote(c.req.Model) + `,"choices":[{"index":0,`
	if !c.completions {
		st.head += `"delta":`
	}
	first := c.start.Add(s.opts.FirstTokenDelay)
	s.sleepUntil(r.Context(), first)
	switch s.opts.Fault {
	case FaultHang:
		if flusher != nil {
			flusher.Flush() // the headers only
		}
		<-r.Context().Done()
		return
	case FaultOnlyDone:
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	if !c.completions {
		// vLLM's first chat chunk carries the role only.
		if !st.send(`{"role":"assistant","content":""}`, "null") {
			return
		}
	}
	if f := s.opts.Fault; f == FaultErrorChunk || f == FaultErrorChunkNested {
		// vLLM's chat stream generator catches the exception, yields the error as one data:
		// line and then data: [DONE] (serving_chat.py / chat_completion/serving.py).
		e := map[string]any{"object": "error", "message": "CUDA error: an illegal memory access was encountered", "type": "InternalServerError", "param": nil, "code": 500}
		if f == FaultErrorChunkNested {
			delete(e, "object")
			e = map[string]any{"error": e}
		}
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
		return
	}
	if !s.streamTokens(r, st, first) {
		return
	}
	if st.times != nil {
		if rid := r.Header.Get("X-Request-Id"); rid != "" {
			// Stored before [DONE], so a client that has read [DONE] finds them.
			s.mu.Lock()
			s.times[rid] = st.times
			s.mu.Unlock()
		}
	}
	if c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage {
		u, _ := json.Marshal(c.usage)
		fmt.Fprintf(w, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%d,\"model\":%s,\"choices\":[],\"usage\":%s}\n\n",
			c.id, c.chunkObject, c.created, quote(c.req.Model), u)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// streamTokens sends the reasoning and the reply one token per interval from first; false when
// the stream ended early (the client left, a fault cut it).
func (s *Server) streamTokens(r *http.Request, st *streamer, first time.Time) bool {
	c := st.c
	k := 0
	for _, t := range c.thinking {
		s.sleepUntil(r.Context(), first.Add(time.Duration(k)*s.opts.TokenInterval))
		k++
		if r.Context().Err() != nil || !st.send(`{"`+c.rfield+`":`+quote(t)+`}`, "null") {
			return false
		}
	}
	for i, t := range c.toks {
		s.sleepUntil(r.Context(), first.Add(time.Duration(k)*s.opts.TokenInterval))
		k++
		if r.Context().Err() != nil {
			return false
		}
		if s.opts.CutAfter > 0 && i == s.opts.CutAfter {
			s.cut(st.w)
			return false
		}
		// vLLM V1 puts finish_reason on the chunk with the last token.
		fin := "null"
		if i == len(c.toks)-1 {
			fin = quote(c.finish)
		}
		if !st.send(st.text(t), fin) {
			return false
		}
		if i == 0 {
			switch s.opts.Fault {
			case FaultGarbageChunk:
				_, _ = io.WriteString(st.w, "data: upstream connect error or disconnect/reset before headers\n\n")
			case FaultStall:
				<-r.Context().Done()
				return false
			}
		}
	}
	return len(c.toks) > 0 || st.send(st.text(""), quote(c.finish))
}

// tokens splits the reply into word tokens (a leading space belongs to the word, as in BPE
// vocabularies); with ignoreEOS and maxTok > 0 it repeats the reply to exactly maxTok tokens.
func (s *Server) tokens(question string, maxTok int, ignoreEOS bool) ([]string, string) {
	reply := s.opts.Fallback
	q := strings.ToLower(question)
	if j, ok := strings.CutPrefix(question, "\x00judge\x00"); ok {
		reply, q = Grade(j), ""
	}
	for _, a := range s.opts.Answers {
		if q == "" {
			break
		}
		if strings.Contains(q, strings.ToLower(a.Match)) {
			reply = a.Reply
			break
		}
	}
	words := strings.Fields(reply)
	var toks []string
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		toks = append(toks, w)
	}
	if ignoreEOS && maxTok > 0 {
		for i := 0; len(toks) < maxTok; i++ {
			toks = append(toks, " "+words[i%len(words)])
		}
	}
	if maxTok >= 0 && len(toks) > maxTok {
		return toks[:maxTok], "length"
	}
	return toks, "stop"
}

// cut ends the response without [DONE]: the connection is closed under the client, as when
// a proxy's read timeout or a crash ends a stream.
func (s *Server) cut(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			// With chunked encoding the client sees an unexpected EOF mid-body.
			_ = conn.Close()
		}
	}
}

// embeddings is /v1/embeddings with a bag-of-words vector (hashed words, normalised by the
// client's cosine): texts sharing words are similar. A simulation, not a language model.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Input any    `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	if !s.serves(req.Model) {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	var inputs []string
	switch v := req.Input.(type) {
	case string:
		inputs = []string{v}
	case []any:
		for _, x := range v {
			inputs = append(inputs, fmt.Sprint(x))
		}
	}
	var data []any
	for i, in := range inputs {
		vec := make([]float64, 256)
		for _, word := range strings.FieldsFunc(strings.ToLower(in), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			h := uint32(2166136261)
			for j := 0; j < len(word); j++ {
				h = (h ^ uint32(word[j])) * 16777619
			}
			vec[h%256]++
		}
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vec})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
}

func (s *Server) judges(model string) bool {
	for _, m := range s.opts.Judges {
		if m == model {
			return true
		}
	}
	return false
}

func (s *Server) serves(model string) bool {
	for _, m := range s.opts.Models {
		if m == model {
			return true
		}
	}
	return false
}

func (s *Server) sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes vLLM's error shape for request errors (vLLM >= 0.10 nests it under "error").
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}
