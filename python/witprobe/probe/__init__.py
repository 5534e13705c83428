"""The probe: the witness cache that sees every write, the meters of the three operators
(torch references, the specification of any kernel), and device-resident accumulators."""
