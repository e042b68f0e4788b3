"use strict";
document.getElementById("app").textContent = "InterLock console";
