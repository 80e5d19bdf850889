package discover_test

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// Each answer of the scripted transport takes recLen bytes of the input:
// an action byte (0: timeout, 1: transport failure, else answer), the
// status (2 bytes, big endian) and the 64 data bytes. The script repeats
// when it runs out.
const recLen = 1 + 2 + smp.DataSize

// scripted answers every SMP from a byte script, whatever was asked.
type scripted struct {
	mu     sync.Mutex
	script []byte
	off    int
}

func (s *scripted) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	s.mu.Lock()
	var rec [recLen]byte
	for i := range rec {
		if len(s.script) == 0 {
			break
		}
		rec[i] = s.script[s.off]
		s.off = (s.off + 1) % len(s.script)
	}
	s.mu.Unlock()
	switch rec[0] {
	case 0:
		return &transport.OpError{Op: "recv", Source: "fuzz", Err: transport.ErrTimeout}
	case 1:
		return &transport.OpError{Op: "recv", Source: "fuzz", Err: errors.New("device gone")}
	}
	copy(resp, req[:smp.MADSize])
	resp[3] = smp.MethodGetResp
	binary.BigEndian.PutUint16(resp[4:], 0x8000|binary.BigEndian.Uint16(rec[1:])&0x7fff)
	copy(resp[smp.DataOffset:], rec[3:])
	return nil
}

func (s *scripted) Close() error { return nil }

// recorder passes SMPs to a real transport and writes the answers down
// in the scripted format.
type recorder struct {
	tr  transport.Transport
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := r.tr.Exchange(ctx, dlid, req, resp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.out = append(r.out, make([]byte, recLen)...)
		return err
	}
	r.out = append(r.out, 2, resp[4]&0x7f, resp[5])
	r.out = append(r.out, resp[smp.DataOffset:smp.DataOffset+smp.DataSize]...)
	return nil
}

func (r *recorder) Close() error { return nil }

// record runs a discovery of spec one SMP at a time and returns the
// answers as a script.
func record(f *testing.F, spec string) []byte {
	s, err := sim.Generate(spec, nil)
	if err != nil {
		f.Fatal(err)
	}
	tr, _ := s.Attach("")
	rec := &recorder{tr: tr}
	if _, err := discover.Discover(context.Background(), rec, discover.Config{MaxHops: 3, Outstanding: 1, Timeout: 10 * time.Second, Retries: -1}); err != nil {
		f.Fatal(err)
	}
	return rec.out
}

// FuzzDiscover runs the engine over a transport answering arbitrary bytes
// (seeded from real answers of the embedded simulator): it must not
// panic, hang or grow past its limits, must leave a well-formed graph and
// must return every MAD buffer.
func FuzzDiscover(f *testing.F) {
	f.Add(record(f, "fattree:levels=2,radix=4"))
	f.Add(record(f, `fattree:levels=2,radix=4;Guid "S1" 0x200004`))
	f.Add(record(f, `fattree:levels=2,radix=6;Inconsistent "L2" numports 2`))
	f.Add([]byte{0})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, script []byte) {
		const maxNodes = 24
		// Generous bounds (a busy machine is slow, not hung): the
		// scripted transport answers at once, so a run that hits them
		// loops.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var pool model.MADPool
		var res *discover.Result
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err = discover.Discover(ctx, &scripted{script: script}, discover.Config{
				MaxHops: 6, Outstanding: 4, Timeout: time.Millisecond, Retries: 1, MaxNodes: maxNodes, Pool: &pool,
			})
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			buf := make([]byte, 1<<20)
			t.Fatalf("hung:\n%s", buf[:runtime.Stack(buf, true)])
		}
		if pool.Outstanding() != 0 {
			t.Fatalf("%d MADs outstanding", pool.Outstanding())
		}
		if err != nil {
			return
		}
		if res.Interrupted {
			t.Fatal("hit the one-minute deadline")
		}
		if n := len(res.Fabric.Nodes); n > maxNodes {
			t.Fatalf("%d nodes past MaxNodes %d", n, maxNodes)
		}
		twins := twinOf(nil)
		for _, p := range res.Problems {
			if p.Kind == discover.ProblemDuplicateGUID {
				// (libibnetdisc moves a twin's links to the node it
				// takes the twin for: nodes may be cut off)
				twins = twinOf{}
			}
		}
		checkGraphTwins(t, res.Fabric, nil, twins)
	})
}
