//! Loop Engine runtime (Loop Engine protocols).
