"""Listener security as Kafka has it: TLS, SASL (PLAIN, SCRAM-SHA-256/512), principals.

Pure parts: ``scram`` (RFC 5802/7677 and Kafka's credential string), ``sasl`` (one
connection's SASL server). See docs/DESIGN.md, section "Security".
"""
