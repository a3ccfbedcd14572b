"""The demo site: a Django project that serves an agent over A2A with a2a_toolcall."""
