// Command cert-manager-controllers runs cert-manager's own controllers for Certificates, the CA and
// SelfSigned issuers and the CertificateRequest approver, built from the cert-manager module of the
// Go module proxy. The proxy serves github.com/cert-manager/cert-manager (pkg/ holds every
// controller) but not the separate module of its cmd/controller, so this is the small main that
// starts them: the same constructors (controllerpkg.Known) and the same ContextFactory as
// cert-manager's controller does, with no webhook, no ACME, no leader election.
//
//	cert-manager-controllers --kubeconfig FILE [--cluster-resource-namespace NS]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// wanted are the controllers this test needs (Known() also holds any other package's init).
var wanted = map[string]bool{
	"certificaterequests-approver":          true,
	"certificaterequests-issuer-ca":         true,
	"certificaterequests-issuer-selfsigned": true,
	"certificates-issuing":                  true,
	"certificates-key-manager":              true,
	"certificates-readiness":                true,
	"certificates-request-manager":          true,
	"certificates-revision-manager":         true,
	"certificates-trigger":                  true,
	"clusterissuers":                        true,
	"issuers":                               true,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuers' Secrets")
	flag.Parse()
	if err := run(*kubeconfig, *clusterNS); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controllers:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, clusterNS string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The test that started it holds the other end of stdin: when that process dies, however it dies,
	// stdin closes and this stops too, instead of retrying against an API server that is gone.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	opts := controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: clusterNS},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	names := []string{}
	for name := range controllerpkg.Known() {
		if wanted[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) != len(wanted) {
		return fmt.Errorf("registered controllers %v, wanted %d", names, len(wanted))
	}
	done := make(chan error, len(names))
	for _, name := range names {
		c, err := controllerpkg.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		go func(name string, c controllerpkg.Interface) {
			err := c.Run(2, ctx)
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			}
			done <- err
		}(name, c)
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	fmt.Fprintf(os.Stderr, "cert-manager-controllers: running %v\n", names)
	for range names {
		if err := <-done; err != nil {
			return err
		}
	}
	return nil
}
