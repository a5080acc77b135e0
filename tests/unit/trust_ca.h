/*
 * trust_ca.h: a CA certificate (P-256, self-signed, valid to 2126) for the
 * tests of a run's trust (tests/unit/test_run_trust.c,
 * tests/fuzz/fuzz_trust_bundle.c): the "CA" run_trust_make puts first.
 */
#ifndef SLUICE_TEST_TRUST_CA_H
#define SLUICE_TEST_TRUST_CA_H

static const char ca_pem[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBejCCASGgAwIBAgIULiXPV46nERbUDhXQxmxj5CfGQokwCgYIKoZIzj0EAwIw\n"
	"EjEQMA4GA1UEAwwHZnV6eiBDQTAgFw0yNjEyMDcxNzE5NDdaGA8yMTI2MTExMzE3\n"
	"MTk0N1owEjEQMA4GA1UEAwwHZnV6eiBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
	"A0IABE8mrjemAAramuedFzLSGcUy7zaU9nBXyptcMOxRq9I4z2j7Rq5zs2FbDKBI\n"
	"lyHVLzjsPcPZpqNBvNLH2wOLBX2jUzBRMB0GA1UdDgQWBBQlPszZJUzmxyrOj1PR\n"
	"CkDYVzs8rjAfBgNVHSMEGDAWgBQlPszZJUzmxyrOj1PRCkDYVzs8rjAPBgNVHRMB\n"
	"Af8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIEbZ/RqDfZb6QBI28KJC2QMARMtH\n"
	"CEIL44p22DKbUwypAiAjqup1y4Y6UhGoIgfZRn0vzpnZCMFp4ZR1dzU6cMWqPQ==\n"
	"-----END CERTIFICATE-----\n";

#endif
