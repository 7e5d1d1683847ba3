package app

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// spool keeps a copy of a stream that is read once (standard input, a named pipe, a process
// substitution) for the import to read again, without a plaintext copy on disk at any moment: the
// file is unlinked as soon as it is created, so that nothing names it and the system frees it
// when the process ends however it ends (kill -9 included), and what is written to it is
// encrypted under a key that only this process's memory holds (AES-256 in counter mode, which
// lets any offset be read back on its own). A file of SSNs and API keys piped into an import
// leaves nothing readable behind.
type spool struct {
	f     *os.File
	block cipher.Block
	size  int64
	buf   []byte
}

// newSpool creates the spool in the directory for temporary files.
func newSpool() (*spool, error) {
	key := make([]byte, 32)
	rand.Read(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "backoffice-import-*.spool") // mode 0600
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &spool{f: f, block: block}, nil
}

// stream XORs p with the key stream from offset off of the spool.
func (s *spool) stream(dst, src []byte, off int64) {
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], uint64(off/aes.BlockSize))
	ctr := cipher.NewCTR(s.block, iv[:])
	if skip := int(off % aes.BlockSize); skip > 0 {
		var pad [aes.BlockSize]byte
		ctr.XORKeyStream(pad[:skip], pad[:skip])
	}
	ctr.XORKeyStream(dst, src)
}

// Write appends p, encrypted.
func (s *spool) Write(p []byte) (int, error) {
	s.buf = append(s.buf[:0], p...)
	s.stream(s.buf, s.buf, s.size)
	n, err := s.f.WriteAt(s.buf, s.size)
	s.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("the copy of the input: %w", err)
	}
	return n, nil
}

// ReadAt reads back what was written at off.
func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	n, err := s.f.ReadAt(p, off)
	s.stream(p[:n], p[:n], off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// Close releases the spool, and with it the file's space.
func (s *spool) Close() error { return s.f.Close() }
