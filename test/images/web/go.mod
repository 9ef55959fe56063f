module recon8s.test/web

go 1.26
