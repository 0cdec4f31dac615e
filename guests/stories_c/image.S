/* Links the stories_c model image (written by lockstep-image-c) into the
 * guest's read-only data.  STORIES_IMAGE is the image path (a string). */
    .section .rodata.stories_image, "a", @progbits
    .balign 16
    .globl stories_image
    .type stories_image, @object
stories_image:
    .incbin STORIES_IMAGE
    .size stories_image, . - stories_image
    .balign 4
