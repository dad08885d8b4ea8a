package daemon

import (
	"bytes"
	"io"
)

// countLines reads r to its end and adds every newline to p as one
// message: the stdout of a consumer that prints one line per message.
// It returns when r ends (the process and anything holding its stdout
// exited) or fails.
func countLines(r io.Reader, p *progress) {
	buf := make([]byte, 256<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.add(int64(bytes.Count(buf[:n], []byte{'\n'})))
		}
		if err != nil {
			return
		}
	}
}

// ndjsonLines counts the records of a newline-delimited body: its
// newlines, plus one for a last record without its newline.
func ndjsonLines(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	var last byte = '\n'
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
