package difftest_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/zksim/zksim/zkfake/difftest"
)

// Example runs a short sequence on the fake and prints its transcript in
// the corpus format. The same sequence run on a RealSide gives the text a
// real ZooKeeper answers, and Compare tells where the two part.
func Example() {
	seq, err := difftest.ReadTranscript(strings.NewReader(`
sequence example
sessions 2
1 s1 create a data="x" flags=ephemeral acl=open
2 s2 existsW a
3 s2 create a/s- data=nil flags=sequential acl=open
4 s1 close
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := difftest.Run(&difftest.FakeSide{}, seq.Sequence)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := difftest.WriteTranscript(os.Stdout, "", tr); err != nil {
		fmt.Println(err)
	}
	// Output:
	// sequence example
	// sessions 2
	// 1 s1 create a data="x" flags=ephemeral acl=open
	//   -> path=a err=nil
	// 2 s2 existsW a
	//   -> exists=true stat{c=z+1 m=z+1 p=z+1 v=0 cv=0 av=0 eph=s1 len=1 n=0} err=nil watch=w1
	// 3 s2 create a/s- data=nil flags=sequential acl=open
	//   -> path="" err=ErrNoChildrenForEphemerals
	// 4 s1 close
	//   -> closed
	//   s1 event EventSession StateDisconnected err=nil server=own
	//   s2 event EventNodeDeleted StateSyncConnected path=a err=nil
	//   w1 <- EventNodeDeleted StateSyncConnected path=a err=nil then closed
}

// ExampleGenerate prints the first ops of a generated sequence.
func ExampleGenerate() {
	seq := difftest.Generate(3, difftest.DefaultConfig())
	for _, op := range seq.Ops[:3] {
		fmt.Println(op.Line())
	}
	fmt.Println(len(seq.Ops) >= difftest.DefaultConfig().MinOps, seq.Sessions >= 2)
	// Output:
	// 1 s2 create b data="hello" flags=container acl=open
	// 2 s1 create b/x data="zk-data-with-more-bytes" flags=container acl=open
	// 3 s1 create b/x data=nil flags=persistent acl=open
	// true true
}

// A Distribution shows what generated sequences draw: here, how many ops
// of the first hundred seeds send a name that go-zookeeper lets through and
// the server refuses, beside how many creates they make.
func ExampleDistribution() {
	var d difftest.Distribution
	for seed := uint64(1); seed <= 100; seed++ {
		d.Add(difftest.Generate(seed, difftest.DefaultConfig()))
	}
	fmt.Println(d.Count("path: refused by the server, sent by the client"), "of", d.Count("call: create"), "creates")
	// Output: 5 of 467 creates
}
