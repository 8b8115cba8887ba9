package difftest_test

import (
	"strings"
	"testing"

	"github.com/zksim/zksim/zkfake/difftest"
)

// configTranscript is what a 3-node ZooKeeper 3.8.0 ensemble, started by
// .ci/ensemble with client ports from 24181 (reconfigEnabled=false),
// answered to reads of its system nodes and to the writes it refuses
// there: RealSide and WriteTranscript recorded it, quorum lines included.
const configTranscript = `# recorded from a 3-node ZooKeeper 3.8.0 ensemble
sequence config
sessions 1
quorum server.1=127.0.0.1:24881:25881:participant
quorum server.2=127.0.0.1:24882:25882:participant
quorum server.3=127.0.0.1:24883:25883:participant
1 s1 get /zookeeper/config
  -> data="server.1=127.0.0.1:24881:25881:participant\nserver.2=127.0.0.1:24882:25882:participant\nserver.3=127.0.0.1:24883:25883:participant\nversion=0" stat{c=0 m=0 p=0 v=-1 cv=0 av=-1 eph=0 len=138 n=0} err=nil
2 s1 existsW /zookeeper/config
  -> exists=true stat{c=0 m=0 p=0 v=-1 cv=0 av=-1 eph=0 len=138 n=0} err=nil watch=w1
3 s1 getACL /zookeeper/config
  -> acl=[world:anyone:1] stat{c=0 m=0 p=0 v=-1 cv=0 av=-1 eph=0 len=138 n=0} err=nil
4 s1 children /zookeeper/config
  -> children=[] stat{c=0 m=0 p=0 v=-1 cv=0 av=-1 eph=0 len=138 n=0} err=nil
5 s1 getW /zookeeper/config
  -> data="server.1=127.0.0.1:24881:25881:participant\nserver.2=127.0.0.1:24882:25882:participant\nserver.3=127.0.0.1:24883:25883:participant\nversion=0" stat{c=0 m=0 p=0 v=-1 cv=0 av=-1 eph=0 len=138 n=0} err=nil watch=w2
6 s1 setACL /zookeeper/config acl=open version=-1
  -> stat=zero err=ErrNoAuth
7 s1 create /zookeeper/config/x data="x" flags=persistent acl=open
  -> path="" err=ErrNoAuth
8 s1 set /zookeeper/config data="x" version=-1
  -> stat=zero err=ErrNoAuth
9 s1 delete /zookeeper/config version=-1
  -> err=ErrBadArguments
10 s1 get /zookeeper
  -> data="" stat{c=0 m=0 p=0 v=0 cv=-2 av=0 eph=0 len=0 n=2} err=nil
11 s1 get /zookeeper/quota
  -> data="" stat=zero err=nil
`

// TestConfigNodeReplay replays the recording on a fake given the
// recording's quorum (FakeOptions): the same text, stat and ACL, the same
// refusals. A fake given no quorum, a standalone server, answers
// otherwise, which shows that the recording's configuration is what the
// fake's answer comes from.
func TestConfigNodeReplay(t *testing.T) {
	recorded, err := difftest.ReadTranscript(strings.NewReader(configTranscript))
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded.Quorum) != 3 || recorded.Quorum[1].String() != "127.0.0.1:24882:25882:participant" {
		t.Fatalf("quorum read back as %+v", recorded.Quorum)
	}
	fake, err := runFake(t, &difftest.FakeSide{Options: difftest.FakeOptions(recorded.Quorum, recorded.SASLScheme)}, recorded.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if d := difftest.Compare("recorded", recorded, "fake", fake); d != nil {
		t.Errorf("a fake with the recorded quorum:\n%s", d)
	}
	standalone, err := runFake(t, &difftest.FakeSide{}, recorded.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if difftest.Compare("recorded", recorded, "standalone", standalone) == nil {
		t.Error("a standalone fake answers as the ensemble does; want its empty configuration")
	}
	// The quorum lines survive a write and a read.
	var b strings.Builder
	if err := difftest.WriteTranscript(&b, "", recorded); err != nil {
		t.Fatal(err)
	}
	back, err := difftest.ReadTranscript(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Quorum) != len(recorded.Quorum) || back.Quorum[2] != recorded.Quorum[2] {
		t.Errorf("quorum %+v after a round trip, want %+v", back.Quorum, recorded.Quorum)
	}
}

// TestSASLSchemeReplay holds a transcript's "scheme sasl" line to what it
// changes: a sasl ACL is taken by a fake given the scheme (FakeOptions),
// as by an ensemble whose zoo.cfg names SASLAuthenticationProvider, and
// refused by one without it, as by a server without the provider; the
// line survives a write and a read.
func TestSASLSchemeReplay(t *testing.T) {
	recorded, err := difftest.ReadTranscript(strings.NewReader(`sequence sasl
sessions 1
scheme sasl
1 s1 create a data="x" flags=persistent acl=sasl
2 s1 create b data="x" flags=persistent acl=saslbad
3 s1 get a
`))
	if err != nil {
		t.Fatal(err)
	}
	if !recorded.SASLScheme {
		t.Fatal(`"scheme sasl" not read`)
	}
	var b strings.Builder
	if err := difftest.WriteTranscript(&b, "", recorded); err != nil {
		t.Fatal(err)
	}
	if back, err := difftest.ReadTranscript(strings.NewReader(b.String())); err != nil || !back.SASLScheme {
		t.Fatalf("after a round trip: %v, scheme sasl %v", err, back != nil && back.SASLScheme)
	}
	with, err := runFake(t, &difftest.FakeSide{Options: difftest.FakeOptions(nil, true)}, recorded.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	without, err := runFake(t, &difftest.FakeSide{}, recorded.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	if difftest.Compare("with", with, "without", without) == nil {
		t.Error("a fake without the sasl scheme answers a sasl ACL as one with it")
	}
	if got := with.Steps[0].Lines[0]; got != "-> path=a err=nil" {
		t.Errorf("a fake with the scheme creates a node with a sasl ACL: %s", got)
	}
}
