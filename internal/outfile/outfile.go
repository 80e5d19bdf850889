// Package outfile writes output files atomically: into a temporary file in
// the same directory, renamed over the target only when complete, so an
// error never leaves a half-written file behind.
package outfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is an output file being written.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create starts writing path. Nothing is visible at path until Commit.
func Create(path string) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("%s: cannot write: %w", path, unwrapPath(err))
	}
	return &File{f: f, path: path}, nil
}

// Write writes to the temporary file.
func (o *File) Write(b []byte) (int, error) { return o.f.Write(b) }

// Commit flushes the file, gives it mode 0644 and renames it into place.
func (o *File) Commit() error {
	if o.done {
		return nil
	}
	o.done = true
	tmp := o.f.Name()
	if err := o.f.Chmod(0o644); err != nil {
		o.f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	if err := o.f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	if err := os.Rename(tmp, o.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	return nil
}

// Abort removes the temporary file; the target is left as it was.
// It is safe to call after Commit (then it does nothing).
func (o *File) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	os.Remove(o.f.Name())
}

// WriteFile writes path atomically with the bytes fn writes.
func WriteFile(path string, fn func(io.Writer) error) error {
	o, err := Create(path)
	if err != nil {
		return err
	}
	if err := fn(o); err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	if le, ok := err.(*os.LinkError); ok {
		return le.Err
	}
	return err
}
