"""Quality assurance of browser captures: a capture's replay, loaded in the browser, held
against what the browser saw at capture time (the two screenshots, the resources the page was
answered). Modules load on use: the pixel comparison needs Pillow, the check Playwright."""
