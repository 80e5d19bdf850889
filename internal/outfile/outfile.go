// Package outfile writes the suite's output files without ever losing what
// was there: a regular file (or the file a symlink points to) is written
// into a temporary file beside it, flushed, and renamed over it only when
// complete; a target that is not a regular file (a device such as
// /dev/null, a FIFO, a socket) is written in place, never replaced. A
// name for a descriptor the process already has open (/dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N) means that descriptor: it is
// written in place (appending where it was opened for appending), never
// renamed over.
//
// Symbolic links are followed as the kernel's fs.protected_symlinks
// allows: a link in a sticky world-writable directory (/tmp) only when
// its owner is the caller or the directory's owner.
//
// A new file gets mode 0666 minus the umask, a replaced file keeps its
// mode (set-id and sticky bits included) and, where permitted, its
// owner. Errors name the target, never the temporary file. A Set commits
// the outputs of one run together: none is replaced unless all are
// ready. A temporary file does not outlive the process's orderly exit:
// Abort removes one, AbortAll removes every one still pending (for a
// signal path that exits without running deferred calls); one left by a
// process killed outright (SIGKILL) is removed by the next run that
// writes the same target.
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
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxNameLen is the longest file name (one path element) the temporary
// file's name may have: NAME_MAX on Linux and the BSDs.
const MaxNameLen = 255

// maxSymlinks bounds symlink resolution, as the kernel's MAXSYMLINKS.
const maxSymlinks = 40

// ErrUnsafeLink: a symbolic link the kernel's fs.protected_symlinks rule
// would not follow (in a sticky world-writable directory, owned by
// neither the caller nor the directory's owner).
var ErrUnsafeLink = errors.New("symbolic link not followed")

// ErrSameFile: two outputs of one run name the same file.
var ErrSameFile = errors.New("the same file as another output")

// ErrClosedDescriptor: an output names a descriptor that is not open.
var ErrClosedDescriptor = errors.New("descriptor not open")

// File is an output file being written.
type File struct {
	ctx     context.Context
	path    string // the target as the user named it (used in errors)
	real    string // the target after following symlinks
	fd      int    // the inherited descriptor a /dev/fd name means; -1 if none
	tmp     string // the temporary file, once made; "" when writing in place
	f       *os.File
	inPlace bool
	replace bool        // the target exists and is replaced
	old     fs.FileInfo // the target replaced
	ready   bool        // prepared: the temporary file is complete and closed
	done    bool
}

var (
	pendingMu sync.Mutex
	pending   = map[*File]struct{}{}
)

// testHook, when set (by tests), is called before each step of a
// commit with the temporary file's name: "chmod" (its mode set), "sync"
// (flushed), "rename"; an error it returns is the step's.
var testHook func(step, tmp string) error

// failWrite, when set (by tests, through SetWriteFault), returns the
// error a write to the temporary file of a target named base fails with.
var failWrite func(base string) error

// SetWriteFault makes every write to the temporary file of a target
// whose base name is base fail with err (a full disk: syscall.ENOSPC),
// until the returned function is called. It is for tests, which must not
// run in parallel with other users of the package while it is set.
func SetWriteFault(base string, err error) (restore func()) {
	failWrite = func(b string) error {
		if b == base {
			return err
		}
		return nil
	}
	return func() { failWrite = nil }
}

func hook(step, tmp string) error {
	if testHook != nil {
		return testHook(step, tmp)
	}
	return nil
}

// Create starts writing path; see CreateContext.
func Create(path string) (*File, error) { return CreateContext(context.Background(), path) }

// CreateContext starts writing path. A regular target (new, existing or
// behind symlinks) is not touched until Commit: CreateContext checks that
// it can be written and that a temporary file can be made beside it, and
// the temporary file is made at the first write (so none exists while a
// tool discovers its fabric). A target that is not a regular file, or a
// descriptor already open (/dev/stdout), is checked now and written in
// place from the first byte; a FIFO without a reader is waited for then,
// until ctx is done.
func CreateContext(ctx context.Context, path string) (*File, error) {
	if path == "" {
		return nil, errors.New("empty output file name")
	}
	real, fd, err := resolve(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	o := &File{ctx: ctx, path: path, real: real, fd: fd}
	if fd >= 0 {
		o.inPlace = true
		f, err := openDescriptor(fd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		o.f = f
		o.track()
		return o, nil
	}
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
	removeStale(filepath.Dir(real), filepath.Base(real))
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
// gets 0666 minus the umask (the kernel applies it), a replacement 0600
// until prepare gives it the old file's mode.
func (o *File) createTemp() (*os.File, string, error) {
	dir := filepath.Dir(o.real)
	perm := os.FileMode(0o666)
	if o.replace {
		perm = 0o600 // chmod'ed to the old file's mode when complete
	}
	f, tmp, err := createTemp(dir, filepath.Base(o.real), perm)
	if err != nil {
		if o.replace {
			return nil, "", fmt.Errorf("%s: cannot be replaced: no temporary file can be created beside it in %s: %w", o.path, dir, unwrapPath(err))
		}
		return nil, "", fmt.Errorf("%s: cannot create: %w", o.path, unwrapPath(err))
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
// regular file: a device, a FIFO or a socket; or it is a descriptor
// already open, such as /dev/stdout).
func (o *File) InPlace() bool { return o.inPlace }

// Write writes to the temporary file (or, in place, to the target).
func (o *File) Write(b []byte) (int, error) {
	if o.done || o.ready {
		return 0, fmt.Errorf("%s: write after Commit or Abort", o.path)
	}
	if o.f == nil {
		if err := o.open(); err != nil {
			return 0, err
		}
	}
	if failWrite != nil && !o.inPlace {
		if err := failWrite(filepath.Base(o.real)); err != nil {
			return 0, fmt.Errorf("%s: %w", o.path, err)
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
// nothing. Files of one run commit together through a Set.
func (o *File) Commit() error {
	if err := o.prepare(); err != nil {
		return err
	}
	return o.rename()
}

// prepare makes the file ready to rename: the temporary file complete
// (mode set, flushed, closed). A target written in place is closed. On
// error the file is aborted.
func (o *File) prepare() error {
	if o.done || o.ready {
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
	if o.replace {
		// The old file's mode, set now that the writes are done: a
		// write by a user without CAP_FSETID clears set-id bits.
		old := o.old
		if st, err := os.Stat(o.real); err == nil {
			old = st // its mode now, not when Create checked it
		}
		err := hook("chmod", o.tmp)
		if err == nil {
			err = keepMode(o.f, old)
		}
		if err != nil {
			o.Abort()
			return fmt.Errorf("%s: cannot keep its mode %v: %w", o.path, old.Mode().Perm(), unwrapPath(err))
		}
	}
	err := hook("sync", o.tmp)
	if err == nil {
		err = o.f.Sync()
	}
	if err != nil {
		o.Abort()
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	if err := o.f.Close(); err != nil {
		o.f = nil
		o.Abort()
		return fmt.Errorf("%s: %w", o.path, unwrapPath(err))
	}
	o.f = nil
	o.ready = true
	return nil
}

// rename moves a prepared temporary file over the target.
func (o *File) rename() error {
	if o.done {
		return nil
	}
	err := hook("rename", o.tmp)
	if err == nil {
		err = os.Rename(o.tmp, o.real)
	}
	if err != nil {
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

// Set is the output files of one run, committed together: no target is
// replaced unless every file of the set is complete. Its zero value is
// empty and ready to use.
type Set struct {
	files []*File
}

// Create starts writing path as a member of the set (see CreateContext).
// A path naming the same file as an earlier member (by another name, a
// link or a hard link too) is refused with ErrSameFile: one output would
// overwrite the other. Devices, FIFOs and open descriptors are written in
// place and may be named twice.
func (s *Set) Create(ctx context.Context, path string) (*File, error) {
	o, err := CreateContext(ctx, path)
	if err != nil {
		return nil, err
	}
	for _, p := range s.files {
		if !p.done && sameTarget(p, o) {
			o.Abort()
			return nil, fmt.Errorf("%s: %w, %s", path, ErrSameFile, p.path)
		}
	}
	s.files = append(s.files, o)
	return o, nil
}

// sameTarget reports whether a and b would replace the same file.
func sameTarget(a, b *File) bool {
	if a.inPlace || b.inPlace {
		return false
	}
	if a.old != nil && b.old != nil {
		return os.SameFile(a.old, b.old)
	}
	if (a.old == nil) != (b.old == nil) {
		return false
	}
	// two new files: the same name in the same directory
	if filepath.Base(a.real) != filepath.Base(b.real) {
		return false
	}
	da, err1 := os.Stat(filepath.Dir(a.real))
	db, err2 := os.Stat(filepath.Dir(b.real))
	return err1 == nil && err2 == nil && os.SameFile(da, db)
}

// Commit commits every file of the set not yet committed or aborted:
// first each is made ready (written, mode set, flushed), then, only if
// all are, each is renamed over its target. When one cannot be made
// ready, every one is aborted and no target replaced (those written in
// place keep what was written). It returns the first error.
func (s *Set) Commit() error {
	for _, o := range s.files {
		if err := o.prepare(); err != nil {
			s.Abort()
			return err
		}
	}
	var first error
	for _, o := range s.files {
		if err := o.rename(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Abort aborts every file of the set (see File.Abort).
func (s *Set) Abort() {
	for _, o := range s.files {
		o.Abort()
	}
}

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

// resolve follows the symbolic links in path (in every component, up to
// maxSymlinks in all) to the file they point to, which need not exist
// yet, as the kernel's fs.protected_symlinks allows (see mayFollow),
// whatever the system's setting. A name for a descriptor already open
// (/dev/stdout, /dev/fd/N, /proc/self/fd/N, also reached through a link)
// stops the resolution: fd is that descriptor, else -1.
func resolve(path string) (real string, fd int, err error) {
	if fd, ok := descriptorName(path); ok {
		return path, fd, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", -1, fmt.Errorf("cannot write: %w", unwrapPath(err))
	}
	todo := strings.Split(abs, "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if len(todo) == 0 {
			if fd, ok := descriptorName(next); ok {
				return next, fd, nil
			}
		}
		st, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// the rest cannot be resolved: the kernel says why when
				// it is used (a missing directory), or it is the new file
				return filepath.Join(append([]string{next}, todo...)...), -1, nil
			}
			return "", -1, fmt.Errorf("cannot write: %w", unwrapPath(err))
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", -1, fmt.Errorf("cannot write: %w", errTooManyLinks)
		}
		if err := mayFollow(next, st); err != nil {
			if next != abs {
				return "", -1, fmt.Errorf("%s: %w", next, err)
			}
			return "", -1, err
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", -1, fmt.Errorf("cannot write: %w", unwrapPath(err))
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		todo = append(strings.Split(t, "/"), todo...)
	}
	return cur, -1, nil
}

var errTooManyLinks = errors.New("too many levels of symbolic links")

// descriptorName reports whether p names a descriptor of this process:
// /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N,
// /proc/thread-self/fd/N or /proc/PID/fd/N with this process's PID.
func descriptorName(p string) (int, bool) {
	if !filepath.IsAbs(p) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return -1, false
		}
		p = abs
	}
	p = filepath.Clean(p)
	switch p {
	case "/dev/stdin":
		return 0, true
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	dir, n := filepath.Split(p)
	switch dir {
	case "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/":
	default:
		return -1, false
	}
	fd, err := strconv.Atoi(n)
	if err != nil || fd < 0 || strings.TrimLeft(n, "0123456789") != "" {
		return -1, false
	}
	return fd, true
}

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

// tempSuffix is the temporary name's suffix: the process's PID, "-" and
// 12 random hex digits (the PID tells a later run whether the file's
// maker is still alive; see removeStale).
func tempSuffix() string {
	return strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(1<<48|rand.Uint64N(1<<48), 16)[1:]
}

// createTemp creates a new temporary file for base in dir with perm (the
// umask applies). The name's 12 hex digits come from math/rand/v2 (the
// runtime's ChaCha8, randomly seeded): O_EXCL makes a name unique, the
// randomness only makes a clash unlikely, and crypto/rand would link the
// whole FIPS module into every binary (peak RSS).
func createTemp(dir, base string, perm os.FileMode) (*os.File, string, error) {
	for range 100 {
		name := filepath.Join(dir, tempName(base, tempSuffix()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", errors.New("no unused temporary file name")
}

// staleTemp reports whether name is a temporary file of ours for base
// (tempName's pattern) and returns the PID in it.
func staleTemp(name, base string) (int, bool) {
	const digits = 12
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return 0, false
	}
	i := strings.LastIndex(rest, ".tmp")
	if i < 0 {
		return 0, false
	}
	short, suffix := rest[:i], rest[i+len(".tmp"):]
	pid, hex, ok := strings.Cut(suffix, "-")
	if !ok || len(hex) != digits || strings.Trim(hex, "0123456789abcdef") != "" ||
		pid == "" || strings.Trim(pid, "0123456789") != "" {
		return 0, false
	}
	if tempName(base, suffix) != name || !strings.HasPrefix(base, short) {
		return 0, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// staleAge is how long a temporary file must have been left unwritten
// before removeStale may take it: a process in another PID namespace
// (another container sharing the directory) has a PID we cannot see, but
// it writes its temporary file until it renames it.
var staleAge = 30 * time.Second // a variable for tests

// removeStale removes, in dir, the temporary files of ours for base that
// a process killed outright (SIGKILL) left: exactly tempName's pattern, a
// regular file owned by the caller, not written for staleAge, made by a
// process that is no longer alive (its PID is unused, or used by a
// process started after the file was last written). Errors are ignored:
// the files are only clutter.
func removeStale(dir, base string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	defer d.Close()
	self := os.Getpid()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			pid, ok := staleTemp(name, base)
			if !ok || pid == self {
				continue
			}
			p := filepath.Join(dir, name)
			st, err := os.Lstat(p)
			if err != nil || !st.Mode().IsRegular() || !ownedByCaller(st) ||
				time.Since(st.ModTime()) < staleAge || !makerGone(pid, st.ModTime()) {
				continue
			}
			os.Remove(p)
		}
		if err != nil {
			return
		}
	}
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
