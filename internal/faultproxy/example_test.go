package faultproxy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/zkgroup/zkgroup/internal/faultproxy"
)

// Example puts a proxy in front of a one-shot echo server, stalls the
// connection, and resumes it.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() { // echo one connection
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()

	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	// The client under test is given p.Addr() instead of the server's address.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 4)
	_, _ = c.Write([]byte("ping"))
	_, _ = io.ReadFull(c, buf)
	fmt.Printf("echoed %q\n", buf)

	p.Stall()
	_, _ = c.Write([]byte("pong"))
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = c.Read(buf)
	fmt.Println("stalled read timed out:", errors.Is(err, os.ErrDeadlineExceeded))

	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadFull(c, buf)
	fmt.Printf("after resume %q\n", buf)

	_ = c.Close()
	<-served
	// Output:
	// echoed "ping"
	// stalled read timed out: true
	// after resume "pong"
}
