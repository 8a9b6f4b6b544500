package exporter

import (
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"

	"github.com/redrive/redrive/lag"
)

// gzipHeader starts a gzip member: magic, DEFLATE, no flags, no time, no
// extra flags, OS unknown (RFC 1952).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock ends a DEFLATE stream after a sync flush: an empty final block
// of fixed Huffman codes.
var finalBlock = []byte{0x03, 0x00}

var flatePool = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, lag.DeflateLevel)
	return w
}}

// splicedGzip writes one gzip member whose DEFLATE stream is made of the
// per-scrape part of a page, compressed as it is written, and the lag
// sampler's families spliced in already compressed
// (lag.EncodedFamily.Deflated): a scrape compresses the few hundred series
// of the registry, not the whole page.
type splicedGzip struct {
	w     io.Writer
	zw    *flate.Writer // the per-scrape part; nil until written to
	dirty bool          // zw has written blocks since its last flush
	crc   uint32
	size  uint32
	err   error
}

// newSplicedGzip starts a gzip member on w.
func newSplicedGzip(w io.Writer) *splicedGzip {
	g := &splicedGzip{w: w}
	_, g.err = w.Write(gzipHeader)
	return g
}

// Write compresses p.
func (g *splicedGzip) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zw == nil {
		g.zw = flatePool.Get().(*flate.Writer)
		g.zw.Reset(g.w) // refers to nothing spliced before
	}
	g.crc = crc32.Update(g.crc, crc32.IEEETable, p)
	g.size += uint32(len(p))
	g.dirty = true
	n, err := g.zw.Write(p)
	g.err = err
	return n, err
}

// splice writes f's data, compressed once per sample.
func (g *splicedGzip) splice(f lag.EncodedFamily) error {
	if g.err != nil {
		return g.err
	}
	if g.err = g.flush(); g.err != nil {
		return g.err
	}
	if g.zw != nil {
		flatePool.Put(g.zw)
		g.zw = nil
	}
	if _, g.err = g.w.Write(f.Deflated); g.err != nil {
		return g.err
	}
	g.crc = crc32Combine(g.crc, f.CRC, int64(len(f.Data)))
	g.size += uint32(len(f.Data))
	return nil
}

// flush ends what the per-scrape compressor holds with a sync flush, so
// that the next blocks start byte-aligned.
func (g *splicedGzip) flush() error {
	if g.zw == nil || !g.dirty {
		return nil
	}
	g.dirty = false
	return g.zw.Flush()
}

// Close ends the DEFLATE stream and writes the gzip trailer.
func (g *splicedGzip) Close() error {
	if g.err == nil {
		g.err = g.flush()
	}
	if g.zw != nil {
		flatePool.Put(g.zw)
		g.zw = nil
	}
	if g.err != nil {
		return g.err
	}
	var trailer [10]byte
	copy(trailer[:], finalBlock)
	binary.LittleEndian.PutUint32(trailer[2:], g.crc)
	binary.LittleEndian.PutUint32(trailer[6:], g.size)
	_, g.err = g.w.Write(trailer[:])
	return g.err
}

// crc32Combine returns the CRC-32 (IEEE) of a followed by b from their CRCs
// and b's length, as zlib's crc32_combine: the page's checksum without
// reading the spliced data again.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	var even, odd [32]uint32
	odd[0] = 0xedb88320 // the IEEE polynomial, reversed
	row := uint32(1)
	for n := 1; n < 32; n++ {
		odd[n] = row
		row <<= 1
	}
	gf2Square(&even, &odd) // two zero bits
	gf2Square(&odd, &even) // four
	for {
		gf2Square(&even, &odd) // one zero byte, then more
		if lenB&1 != 0 {
			crcA = gf2Times(&even, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
		gf2Square(&odd, &even)
		if lenB&1 != 0 {
			crcA = gf2Times(&odd, crcA)
		}
		lenB >>= 1
		if lenB == 0 {
			break
		}
	}
	return crcA ^ crcB
}

func gf2Times(mat *[32]uint32, vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i++ {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
		vec >>= 1
	}
	return sum
}

func gf2Square(square, mat *[32]uint32) {
	for n := range 32 {
		square[n] = gf2Times(mat, mat[n])
	}
}
