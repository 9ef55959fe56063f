module recon8s.test/pause

go 1.26
