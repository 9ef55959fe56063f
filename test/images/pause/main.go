// pause is the sandbox ("infra") container of every pod on the test node: it holds the pod's
// namespaces, reaps the zombies of processes that share its PID namespace, and exits on SIGINT or
// SIGTERM at once (so a pod never waits its whole grace period for it).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
