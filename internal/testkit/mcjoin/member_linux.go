//go:build linux

package mcjoin

import (
	"context"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/sa"
)

// Member is a CA port of a test's private ibsim fabric, attached with a
// client of its own, that joins groups and leaves them.
type Member struct {
	Host   string
	Client *ibsim.Client
	GUID   uint64 // its port GUID
	SMLID  uint16 // the master SM's LID, where the SA is asked
}

// Attach dials the ibsim at sockName as host (a CA) with a client that
// may send joins (the test's, never a tool's), and reads its port GUID
// and the SM's LID; the client is closed when the test ends.
func Attach(t testing.TB, sockName, host string) *Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := ibsim.Dial(ctx, ibsim.Config{SockName: sockName, Host: host, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	guid, err := LocalPortGUID(ctx, cl)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	sm, err := sa.MasterSMLID(ctx, cl, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return &Member{Host: host, Client: cl, GUID: guid, SMLID: sm}
}

// Join makes m a full member of the group mgid.
func (m *Member) Join(t testing.TB, mgid [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Join(ctx, m.Client, m.SMLID, m.GUID, mgid); err != nil {
		t.Fatalf("join from %s: %v", m.Host, err)
	}
}

// Leave takes m out of the group mgid.
func (m *Member) Leave(t testing.TB, mgid [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Leave(ctx, m.Client, m.SMLID, m.GUID, mgid); err != nil {
		t.Fatalf("leave from %s: %v", m.Host, err)
	}
}

// Create creates the group rec describes (its MGID, Q_Key, P_Key, SL and
// the rest) with m as its first member.
func (m *Member) Create(t testing.TB, rec sa.MCMemberRecord) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Create(ctx, m.Client, m.SMLID, m.GUID, rec); err != nil {
		t.Fatalf("create from %s: %v", m.Host, err)
	}
}
