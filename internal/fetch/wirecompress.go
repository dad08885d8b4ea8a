package fetch

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/gzip"
	snappy "github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// The decompressors are those sarama uses, and like sarama's decoder they
// honour sarama.MaxDecompressedBatchSize (0: unbounded).
var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdDecs    sync.Map // limit (int) -> *zstd.Decoder, safe for concurrent DecodeAll
)

// decompress returns the records of a batch compressed with codec, in
// memory of their own.
func decompress(codec sarama.CompressionCodec, data []byte) ([]byte, error) {
	limit := int(sarama.MaxDecompressedBatchSize)
	switch codec {
	case sarama.CompressionGZIP:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(data))
		} else {
			err = zr.Reset(bytes.NewReader(data))
		}
		if err != nil {
			return nil, err
		}
		out, err := readAllLimited(zr, len(data)*4, limit)
		gzipReaders.Put(zr)
		return out, err
	case sarama.CompressionLZ4:
		zr := lz4Readers.Get().(*lz4.Reader)
		zr.Reset(bytes.NewReader(data))
		out, err := readAllLimited(zr, len(data)*4, limit)
		lz4Readers.Put(zr)
		return out, err
	case sarama.CompressionSnappy:
		if limit <= 0 {
			return snappy.Decode(data)
		}
		out, err := snappy.DecodeCapped(make([]byte, 0, limit), data)
		if err == snappy.ErrDstTooSmall {
			return nil, tooLarge(codec, limit)
		}
		return out, err
	case sarama.CompressionZSTD:
		dec, err := zstdDecoder(limit)
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(data, nil)
		if err == zstd.ErrDecoderSizeExceeded {
			return nil, tooLarge(codec, limit)
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func tooLarge(codec sarama.CompressionCodec, limit int) error {
	return fmt.Errorf("%w: %s batch decompressed to more than %d bytes", sarama.ErrDecompressedBatchTooLarge, codec, limit)
}

// readAllLimited reads r to its end into a buffer of size hint to start
// with, and fails beyond limit bytes (limit 0: none).
func readAllLimited(r io.Reader, hint, limit int) ([]byte, error) {
	if limit > 0 {
		hint = min(hint, limit+1)
		r = io.LimitReader(r, int64(limit)+1)
	}
	buf := bytes.NewBuffer(make([]byte, 0, max(hint, 512)))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	if limit > 0 && buf.Len() > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", sarama.ErrDecompressedBatchTooLarge, limit)
	}
	return buf.Bytes(), nil
}

func zstdDecoder(limit int) (*zstd.Decoder, error) {
	if d, ok := zstdDecs.Load(limit); ok {
		return d.(*zstd.Decoder), nil
	}
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(0)}
	if limit > 0 {
		opts = append(opts, zstd.WithDecoderMaxMemory(uint64(limit)))
	}
	d, err := zstd.NewReader(nil, opts...)
	if err != nil {
		return nil, err
	}
	if old, loaded := zstdDecs.LoadOrStore(limit, d); loaded {
		d.Close()
		return old.(*zstd.Decoder), nil
	}
	return d, nil
}
