package faultproxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// FuzzForward sends arbitrary bytes through the proxy to an echo server,
// optionally stalling while they are written, and checks that exactly the
// same bytes come back followed by a clean end-of-stream.
func FuzzForward(f *testing.F) {
	f.Add([]byte("ruok"), false)
	f.Add([]byte{}, true)
	f.Add([]byte{0, 0xff, '\n', 0}, true)
	f.Add(bytes.Repeat([]byte("kafka"), 20000), true)

	up := startEcho(f, "")
	p := newProxy(f, up.Addr())

	f.Fuzz(func(t *testing.T, data []byte, stall bool) {
		c, err := net.DialTimeout("tcp", p.Addr(), prompt)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(prompt))

		if stall {
			p.Stall()
		}
		werr := make(chan error, 1)
		go func() {
			_, err := c.Write(data)
			if err == nil {
				err = c.(*net.TCPConn).CloseWrite()
			}
			werr <- err
		}()
		if stall {
			p.Resume()
		}
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("read: %v after %d of %d bytes", err, len(got), len(data))
		}
		if err := <-werr; err != nil {
			t.Fatalf("write: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("echo of %d bytes came back as %d different bytes", len(data), len(got))
		}
	})
}
