module github.com/zksim/zksim

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/go-zookeeper/zk v1.0.4
	pgregory.net/rapid v1.3.0
)
