// Package outfile writes the suite's output files without ever losing what
// was there: a regular file (or the file a symlink points to) is written
// into a temporary file beside it, flushed, and renamed over it only when
// complete; a target that is not a regular file (a device such as
// /dev/null, a FIFO, a socket) is written in place, never replaced.
//
// A new file gets mode 0666 minus the umask, a replaced file keeps its
// mode (and, where permitted, its owner). Errors name the target, never
// the temporary file. No temporary file outlives the process's orderly
// exit: Abort removes one, AbortAll removes every one still pending (for
// a signal path that exits without running deferred calls).
package outfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxNameLen is the longest file name (one path element) the temporary
// file's name may have: NAME_MAX on Linux and the BSDs.
const MaxNameLen = 255

// maxSymlinks bounds symlink resolution, as the kernel's MAXSYMLINKS.
const maxSymlinks = 40

// File is an output file being written.
type File struct {
	ctx     context.Context
	path    string // the target as the user named it (used in errors)
	real    string // the target after following symlinks
	tmp     string // the temporary file, once made; "" when writing in place
	f       *os.File
	inPlace bool
	replace bool        // the target exists and is replaced
	old     fs.FileInfo // the target replaced
	done    bool
}

var (
	pendingMu sync.Mutex
	pending   = map[*File]struct{}{}
)

// Create starts writing path; see CreateContext.
func Create(path string) (*File, error) { return CreateContext(context.Background(), path) }

// CreateContext starts writing path. A regular target (new, existing or
// behind symlinks) is not touched until Commit: CreateContext checks that
// it can be written and that a temporary file can be made beside it, and
// the temporary file is made at the first write (so none exists while a
// tool discovers its fabric). A target that is not a
// regular file is checked now and opened for writing in place when the
// first byte is written; a FIFO without a reader is waited for then, until
// ctx is done.
func CreateContext(ctx context.Context, path string) (*File, error) {
	if path == "" {
		return nil, errors.New("empty output file name")
	}
	real, err := resolve(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot write: %w", path, unwrapPath(err))
	}
	o := &File{ctx: ctx, path: path, real: real}
	st, err := os.Stat(real)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("%s: is a directory", path)
	case err == nil && st.Mode()&fs.ModeSocket != 0:
		return nil, fmt.Errorf("%s: is a socket, not a file that can be written", path)
	case err == nil && !st.Mode().IsRegular():
		o.inPlace = true
		if err := o.openInPlace(true); err != nil {
			return nil, err
		}
		o.track()
		return o, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: cannot write: %w", path, unwrapPath(err))
	}
	exists := err == nil
	if exists {
		// Replacing a file the user may not write would bypass its
		// permissions (a rename needs only the directory's): refuse, as
		// a shell's redirection would.
		w, err := os.OpenFile(real, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot write: %w", path, unwrapPath(err))
		}
		w.Close()
	}
	o.replace = exists
	o.old = st
	// Check now that a temporary file can be made beside the target, so
	// a bad target fails before discovery; the one written is made at
	// the first write, so none exists while the tool waits for a fabric.
	f, tmp, err := o.createTemp()
	if err != nil {
		return nil, err
	}
	f.Close()
	os.Remove(tmp)
	o.track()
	return o, nil
}

// createTemp creates the temporary file beside the target: a new file
// gets 0666 minus the umask (the kernel applies it), a replacement the
// old file's mode and, where permitted, owner.
func (o *File) createTemp() (*os.File, string, error) {
	dir := filepath.Dir(o.real)
	perm := os.FileMode(0o666)
	if st, err := os.Stat(o.real); o.replace && err == nil {
		o.old = st // its mode now, not when Create checked it
	}
	if o.replace {
		perm = 0o600 // chmod'ed to the old file's mode below
	}
	f, tmp, err := createTemp(dir, filepath.Base(o.real), perm)
	if err != nil {
		if o.replace {
			return nil, "", fmt.Errorf("%s: cannot be replaced: no temporary file can be created beside it in %s: %w", o.path, dir, unwrapPath(err))
		}
		return nil, "", fmt.Errorf("%s: cannot create: %w", o.path, unwrapPath(err))
	}
	if o.replace {
		if err := keepMode(f, o.old); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, "", fmt.Errorf("%s: cannot keep its mode %v: %w", o.path, o.old.Mode().Perm(), unwrapPath(err))
		}
	}
	return f, tmp, nil
}

// open makes the temporary file (or opens a target written in place).
func (o *File) open() error {
	if o.inPlace {
		return o.openInPlace(false)
	}
	f, tmp, err := o.createTemp()
	if err != nil {
		return err
	}
	pendingMu.Lock()
	o.f, o.tmp = f, tmp
	pendingMu.Unlock()
	return nil
}

// Name returns the target's name as given to Create.
func (o *File) Name() string { return o.path }

// InPlace reports whether the target is written in place (it is not a
// regular file: a device, a FIFO or a socket).
func (o *File) InPlace() bool { return o.inPlace }

// Write writes to the temporary file (or, in place, to the target).
func (o *File) Write(b []byte) (int, error) {
	if o.done {
		return 0, fmt.Errorf("%s: write after Commit or Abort", o.path)
	}
	if o.f == nil {
		if err := o.open(); err != nil {
			return 0, err
		}
	}
	n, err := o.f.Write(b)
	if err != nil {
		err = fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	return n, err
}

// Commit completes the file: the temporary file is flushed to disk and
// renamed over the target (whose directory is then flushed too); a target
// written in place is closed (opened first if nothing was written, so a
// FIFO's reader sees an empty file). Commit after Commit or Abort does
// nothing.
func (o *File) Commit() error {
	if o.done {
		return nil
	}
	if o.inPlace {
		var err error
		if o.f == nil {
			err = o.openInPlace(false)
		}
		if err == nil {
			err = o.f.Close()
			o.f = nil
		}
		o.finish()
		if err != nil {
			return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
		}
		return nil
	}
	if o.f == nil { // nothing was written: an empty file
		if err := o.open(); err != nil {
			o.finish()
			return err
		}
	}
	if err := o.f.Sync(); err != nil {
		o.Abort()
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	if err := o.f.Close(); err != nil {
		o.f = nil
		o.Abort()
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	o.f = nil
	if err := os.Rename(o.tmp, o.real); err != nil {
		o.Abort()
		return fmt.Errorf("%s: cannot be replaced: %w", o.path, unwrapPath(err))
	}
	o.finish()
	syncDir(filepath.Dir(o.real))
	return nil
}

// Abort gives up the file: the temporary file is removed and the target
// is left as it was (a target written in place keeps what was written).
// It is safe to call more than once and after Commit (then it does
// nothing); commands defer it.
func (o *File) Abort() {
	if o.done {
		return
	}
	if o.f != nil {
		o.f.Close()
		o.f = nil
	}
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
	o.finish()
}

// Discard is Abort.
func (o *File) Discard() { o.Abort() }

// AbortAll removes every temporary file not yet committed or aborted. A
// signal path that exits without running deferred calls (SIGPIPE,
// SIGHUP, SIGTERM) calls it first; it is safe to call from any goroutine.
// It returns the number of files removed.
func AbortAll() int {
	pendingMu.Lock()
	var tmps []string
	for o := range pending {
		if o.tmp != "" {
			tmps = append(tmps, o.tmp)
		}
	}
	pendingMu.Unlock()
	n := 0
	for _, t := range tmps {
		if os.Remove(t) == nil {
			n++
		}
	}
	return n
}

// Pending returns the number of files not yet committed or aborted.
func Pending() int {
	pendingMu.Lock()
	defer pendingMu.Unlock()
	return len(pending)
}

func (o *File) track() {
	pendingMu.Lock()
	pending[o] = struct{}{}
	pendingMu.Unlock()
}

func (o *File) finish() {
	o.done = true
	pendingMu.Lock()
	delete(pending, o)
	pendingMu.Unlock()
}

// WriteFile writes path with the bytes fn writes, committing only when fn
// succeeds.
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

// openInPlace opens a target that is not a regular file. With probe set
// (at Create) a FIFO without a reader is not waited for: it is opened at
// the first write.
func (o *File) openInPlace(probe bool) error {
	f, err := openNonblock(o.real)
	if err == nil {
		o.f = f
		return nil
	}
	if !errors.Is(err, errNoReader) {
		return fmt.Errorf("%s: cannot write: %w", o.path, unwrapPath(err))
	}
	if probe {
		return nil
	}
	// A FIFO with no reader yet: wait for one, as a shell's redirection
	// does, but not past ctx.
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := os.OpenFile(o.real, os.O_WRONLY, 0)
		ch <- result{f, err}
	}()
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: cannot write: %w", o.path, unwrapPath(r.err))
		}
		o.f = r.f
		return nil
	case <-ctx.Done():
		go func() { // close it if a reader comes after all
			if r := <-ch; r.f != nil {
				r.f.Close()
			}
		}()
		return fmt.Errorf("%s: no reader opened the FIFO: %w", o.path, ctx.Err())
	}
}

// resolve follows symlinks at path (up to maxSymlinks) to the file they
// point to, which need not exist yet.
func resolve(path string) (string, error) {
	p := path
	for range maxSymlinks {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", &fs.PathError{Op: "resolve", Path: path, Err: errTooManyLinks}
}

var errTooManyLinks = errors.New("too many levels of symbolic links")

// tempName is "." + base + ".tmp" + suffix, with base shortened (at a
// character boundary) so the whole name fits MaxNameLen bytes.
func tempName(base, suffix string) string {
	const extra = len(".") + len(".tmp")
	if max := MaxNameLen - extra - len(suffix); len(base) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	return "." + base + ".tmp" + suffix
}

// createTemp creates a new temporary file for base in dir with perm (the
// umask applies). The name's 12 hex digits come from math/rand/v2 (the
// runtime's ChaCha8, randomly seeded): O_EXCL makes a name unique, the
// randomness only makes a clash unlikely, and crypto/rand would link the
// whole FIPS module into every binary (peak RSS).
func createTemp(dir, base string, perm os.FileMode) (*os.File, string, error) {
	for range 100 {
		suffix := strconv.FormatUint(1<<48|rand.Uint64N(1<<48), 16)[1:]
		name := filepath.Join(dir, tempName(base, suffix))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("no unused temporary file name")
}

// syncDir flushes a directory so a rename in it survives a crash; file
// systems that cannot sync a directory are ignored.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
