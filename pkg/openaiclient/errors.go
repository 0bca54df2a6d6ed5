package openaiclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ain-hpc/ain/pkg/next"
)

// HTTPError is a non-2xx answer from the server, whatever shape its body has (vLLM's
// {"error":"Unauthorized"}, OpenAI's {"error":{"message":..}}, or older vLLM's flat
// {"object":"error","message":..}).
type HTTPError struct {
	StatusCode int
	Status     string
	Message    string
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return e.Status
	}
	return fmt.Sprintf("%s: %s", e.Status, e.Message)
}

// StatusError reads a non-2xx response into an *HTTPError.
func StatusError(resp *http.Response) *HTTPError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Message: ErrorMessage(body)}
}

// ErrorMessage digs the message out of the error bodies OpenAI-compatible servers send.
func ErrorMessage(body []byte) string {
	var shapes struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Detail  any    `json:"detail"`
	}
	if err := json.Unmarshal(body, &shapes); err != nil {
		return strings.TrimSpace(string(body))
	}
	switch e := shapes.Error.(type) {
	case string:
		return e
	case map[string]any:
		if m, ok := e["message"].(string); ok {
			return m
		}
	}
	if shapes.Message != "" {
		return shapes.Message
	}
	if shapes.Detail != nil {
		return fmt.Sprint(shapes.Detail)
	}
	return strings.TrimSpace(string(body))
}

// asHTTPError turns go-openai's error types into an *HTTPError.
func asHTTPError(err error) (*HTTPError, bool) {
	var he *HTTPError
	if errors.As(err, &he) {
		return he, true
	}
	var api *openai.APIError
	if errors.As(err, &api) && api.HTTPStatusCode > 0 {
		return &HTTPError{StatusCode: api.HTTPStatusCode, Status: api.HTTPStatus, Message: api.Message}, true
	}
	var re *openai.RequestError
	if errors.As(err, &re) && re.HTTPStatusCode > 0 {
		return &HTTPError{StatusCode: re.HTTPStatusCode, Status: re.HTTPStatus, Message: ErrorMessage(re.Body)}, true
	}
	return nil, false
}

// Reason says what kind of failure a CallError is, for the caller to decide what follows (an
// exit code, a retry).
type Reason int

// The reasons.
const (
	ReasonFailure      Reason = iota // the server answered with an error, or the answer is unusable
	ReasonInput                      // the request names what is not there (a model) or is ambiguous
	ReasonTimeout                    // no answer in time
	ReasonCancelled                  // the caller's context ended
	ReasonUnreachable                // no HTTP answer from the model server (TLS, DNS, refused, a proxy's 502)
	ReasonUnauthorized               // the API key was refused or missing
)

// CallError is a call to a model endpoint that failed, explained: Err says which address, which
// CA, which key; Hint what to do about it.
type CallError struct {
	Reason Reason
	Err    error
	// hint says what to do; each %s in it is one of cmds, worded by Hint's cmd.
	hint string
	cmds []next.Command
}

func (e *CallError) Error() string { return e.Err.Error() }
func (e *CallError) Unwrap() error { return e.Err }

// Hint says what usually fixes the error, the ain commands it names worded by cmd (next.Hinter).
func (e *CallError) Hint(cmd func(next.Command) string) string {
	if len(e.cmds) == 0 {
		return e.hint
	}
	h := e.hint
	for _, c := range e.cmds { // not Sprintf: the rest of a hint may hold a %
		h = strings.Replace(h, "%s", cmd(c), 1)
	}
	return h
}

// callError is err with its reason and hint; the hint's %s are cmds, in order.
func callError(r Reason, err error, hint string, cmds ...next.Command) *CallError {
	return &CallError{Reason: r, Err: err, hint: hint, cmds: cmds}
}

// ReasonOf is the Reason of the CallError in err's chain; ReasonFailure when there is none.
func ReasonOf(err error) Reason {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ReasonFailure
}

// Explain turns a transport or HTTP error into a readable *CallError: which address,
// which CA, which key, with a hint what to do. op names the call ("POST /v1/chat/completions").
func (c *Client) Explain(err error, op string) error {
	if err == nil {
		return nil
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return err
	}
	var stall *StallError
	if errors.As(err, &stall) {
		what := "the engine may be wedged (/health can answer while a hung NCCL group stops every request), or overloaded"
		if !stall.FirstByte {
			what = "the engine may have hung mid-answer (a hung NCCL group), or a proxy holds the stream"
		}
		return callError(ReasonTimeout, fmt.Errorf("%s %s: %w", op, c.base, err),
			what+"; `%s` and the pod's log say more; "+stall.Flag+" 0 waits for ever", "serve status")
	}
	if errors.Is(err, context.Canceled) {
		return callError(ReasonCancelled, fmt.Errorf("%s: cancelled", op), "")
	}
	var cut *StreamCutError
	if errors.As(err, &cut) {
		return callError(ReasonUnreachable, fmt.Errorf("%s %s: %w", op, c.base, err),
			"a proxy may have cut the stream (ingress read timeouts), or the model server restarted")
	}
	var bad *AnswerError
	if errors.As(err, &bad) {
		return callError(ReasonFailure, fmt.Errorf("%s %s: %w", op, c.base, err), bad.hint())
	}
	if he, ok := asHTTPError(err); ok {
		switch he.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			what := "refused the API key"
			hint := "check that --api-key / AIN_API_KEY matches the server's --api-key (VLLM_API_KEY)"
			if c.opts.APIKey == "" {
				what = "wants an API key and none was given"
				return callError(ReasonUnauthorized, fmt.Errorf("%s %s: %s (%s)", op, c.base, what, he.Error()),
					"pass --api-key or set AIN_API_KEY (for `%s`, the key is in the Secret it references)", "serve")
			}
			return callError(ReasonUnauthorized, fmt.Errorf("%s %s: %s (%s)", op, c.base, what, he.Error()), hint)
		case http.StatusNotFound:
			if strings.Contains(strings.ToLower(he.Message), "model") {
				return callError(ReasonInput, fmt.Errorf("%s: %s", op, he.Message), "`%s` lists the served models", "models")
			}
			return callError(ReasonFailure, fmt.Errorf("%s %s: %s", op, c.base, he.Error()),
				"is the endpoint an OpenAI-compatible server? Its base URL should serve /v1/models")
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return callError(ReasonUnreachable, fmt.Errorf("%s %s: %s", op, c.base, he.Error()),
				"the proxy in front of the model answered, the model server did not: are its pods ready (`%s`)?", "serve status")
		}
		return fmt.Errorf("%s %s: %s", op, c.base, he.Error())
	}
	addr := c.dialAddr()
	var fake *x509.Certificate
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	if errors.As(err, &uae) && uae.Cert != nil && isIngressFakeCert(uae.Cert) {
		fake = uae.Cert
	} else if errors.As(err, &hne) && hne.Certificate != nil && isIngressFakeCert(hne.Certificate) {
		// It names ingress.local only, so the host check fails before the CA check.
		fake = hne.Certificate
	}
	if fake != nil {
		return callError(ReasonUnreachable,
			fmt.Errorf("TLS to %s: the ingress controller answered with its own fake default certificate (%q), not the Ingress's: its TLS Secret is missing, invalid, or not for this host", addr, fake.Subject.CommonName),
			"`%s` checks and creates NAME-tls; `kubectl describe ingress` and the controller's log say why it rejected the Secret (a CA file does not help here)", "serve")
	}
	if errors.As(err, &uae) {
		issuer := ""
		if uae.Cert != nil {
			issuer = fmt.Sprintf(" (issued by %q)", uae.Cert.Issuer.String())
		}
		return callError(ReasonUnreachable,
			fmt.Errorf("TLS to %s: the server's certificate%s is not signed by a CA trusted here (%s)", addr, issuer, c.caNames),
			"pass --ca-file with the CA that signed the ingress certificate (--insecure skips verification: never for real traffic)")
	}
	if errors.As(err, &hne) {
		return callError(ReasonUnreachable, fmt.Errorf("TLS to %s: %v", addr, hne),
			"use the host name the certificate was issued for in --endpoint")
	}
	var cie x509.CertificateInvalidError
	if errors.As(err, &cie) {
		return callError(ReasonUnreachable, fmt.Errorf("TLS to %s: %v", addr, cie), "renew the ingress certificate")
	}
	var rhe tls.RecordHeaderError
	if errors.As(err, &rhe) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return callError(ReasonUnreachable, fmt.Errorf("TLS to %s: the server does not speak TLS", addr),
			"use an http:// endpoint for a plain-HTTP server (vLLM itself serves plain HTTP on :8000)")
	}
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		return callError(ReasonUnreachable, fmt.Errorf("TLS to %s: %v (trusted: %s)", addr, verr.Err, c.caNames),
			"pass --ca-file with the CA that signed the server's certificate")
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return callError(ReasonUnreachable, fmt.Errorf("%s: connection refused at %s", op, addr),
			"is the model server running and ready (`%s`), and is --endpoint right? A port-forward must still be running", "serve status")
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return callError(ReasonUnreachable, fmt.Errorf("%s: cannot resolve %q: %v", op, dnsErr.Name, dnsErr.Err),
			"check the host in --endpoint (the ingress host needs a DNS record)")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return callError(ReasonTimeout, fmt.Errorf("%s: %s did not answer in time", op, addr),
			"the server may be overloaded or still loading the model")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
		return callError(ReasonUnreachable, fmt.Errorf("%s: %s closed the connection: %v", op, addr, err),
			"a proxy may have cut the stream (ingress read timeouts) or the model server restarted")
	}
	return fmt.Errorf("%s %s: %w", op, c.base, err)
}

// ingressNginxFakeCN is the subject of the certificate ingress-nginx serves when an Ingress's
// own certificate is missing or unusable (its "default SSL certificate").
const ingressNginxFakeCN = "Kubernetes Ingress Controller Fake Certificate"

func isIngressFakeCert(c *x509.Certificate) bool {
	return c.Subject.CommonName == ingressNginxFakeCN || c.Issuer.CommonName == ingressNginxFakeCN
}

// Fatal reports whether err would fail every further request too.
func Fatal(err error) bool {
	if errors.As(err, new(*StallError)) {
		return true // a server that stopped answering one request stops the next one too
	}
	switch ReasonOf(err) {
	case ReasonUnreachable, ReasonUnauthorized, ReasonCancelled, ReasonInput:
		return true
	}
	return false
}
