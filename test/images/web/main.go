// The web server of recon8s' App tests: answers every HTTP request with a line naming its version
// and the host (pod) that served it, so a test can tell which pods answer and when a rollout has
// replaced them. Static, no dependencies, nothing written to disk; exits at once on SIGTERM.
//
//	web [-listen :8080]     PORT=<n> sets the port, WEB_VERSION the version it reports
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	listen := flag.String("listen", ":"+port, "address to listen on")
	flag.Parse()
	version := os.Getenv("WEB_VERSION")
	if version == "" {
		version = "dev"
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	body := fmt.Sprintf("recon8s-web version=%s host=%s\n", version, host)

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Web-Version", version)
		_, _ = fmt.Fprint(w, body)
	})
	server := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		// A short drain: open keep-alive connections must not hold the pod for its grace period.
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	log.Printf("recon8s-web version=%s uid=%d listening on %s", version, os.Getuid(), *listen)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-drained
	log.Print("stopped")
}
