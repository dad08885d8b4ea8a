// Package framerelay hands on the bytes of a stream of length-prefixed
// frames read from a connection, where its reader decides frame by frame
// what goes on: the frame's bytes as they come, or bytes of its own in
// their place (a frame taken out, or rewritten). internal/zkconn's side
// connection (ZooKeeper replies) and internal/fetch's tap (Kafka fetch
// responses) read so.
package framerelay

import "io"

// Relay is where a reader is in the stream. Not safe for concurrent use:
// a connection has one reader.
type Relay struct {
	// Out is handed on before anything more is read.
	Out []byte
	// Left is how many bytes read from the connection are handed on as
	// they come, after Out.
	Left int
}

// Read hands on Out, then up to Left bytes read from r; when neither is
// left it calls next, which reads the start of the next frame from r and
// sets Out and Left (or leaves both empty: it took the frame), and
// returns its error, if any, with nothing read.
func (f *Relay) Read(r io.Reader, p []byte, next func() error) (int, error) {
	for {
		if len(f.Out) > 0 {
			n := copy(p, f.Out)
			f.Out = f.Out[n:]
			return n, nil
		}
		if f.Left > 0 {
			n, err := r.Read(p[:min(len(p), f.Left)])
			f.Left -= n
			return n, err
		}
		if err := next(); err != nil {
			return 0, err
		}
	}
}
