package openaiclient_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ain-hpc/ain/pkg/openaiclient"
)

// TestTrackArrival: the headers and first chunk come in one write; the caller reads the body
// 50 ms after they arrived. The lag says the bytes it got are that old, over plain HTTP and over
// TLS (whose connection wraps the dialled one); a second chunk, read as it arrives, is fresh.
func TestTrackArrival(t *testing.T) {
	second := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{}]}\n\n")
		w.(http.Flusher).Flush()
		<-second
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	for _, tls := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(h)
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		c, err := openaiclient.New(openaiclient.Options{Endpoint: srv.URL, Insecure: tls})
		if err != nil {
			t.Fatal(err)
		}
		ctx, lag := c.TrackArrival(context.Background())
		if d := lag(); d != 0 {
			t.Errorf("TLS %v: lag %s before the request", tls, d)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := c.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		buf := make([]byte, 4096)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		if d := lag(); d < 50*time.Millisecond {
			t.Errorf("TLS %v: lag %s after reading bytes that arrived over 50 ms before", tls, d)
		}
		read := make(chan time.Duration)
		go func() {
			_, _ = resp.Body.Read(buf)
			read <- lag()
		}()
		time.Sleep(50 * time.Millisecond)
		close(second)
		if d := <-read; d >= 50*time.Millisecond {
			t.Errorf("TLS %v: lag %s for bytes read as they arrived", tls, d)
		}
		resp.Body.Close()
		srv.Close()
		second = make(chan struct{})
	}
}
